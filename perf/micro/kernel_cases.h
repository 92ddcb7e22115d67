// SPDX-License-Identifier: Apache-2.0
// What kernel_bench measures: the host reduction kernels per datatype x op, beside memcpy and
// the STREAM triad, at one operand size per level of the memory hierarchy. Every case moves
// whole arrays once per iteration and reports bytes per second.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "aligned_buffer.h"
#include "kernels/host/host_reduce_isa.h"
#include "loom.h"

namespace loom::micro {

struct SizeLevel {
  const char* level;  // where three operands of this size live: "L1", "L2", "DRAM"
  size_t bytes;       // per operand
};
// Three operands of 8 KiB fit any x86 L1d (32-48 KiB); three of 256 KiB fit a 1 MiB L2 (not
// L1); three of 64 MiB are far beyond any L3 slice a core gets.
inline constexpr SizeLevel kSizeLevels[] = {
    {"L1", size_t{8} << 10}, {"L2", size_t{256} << 10}, {"DRAM", size_t{64} << 20}};

// Benchmark names, also used to look results up for the summary.
std::string sizeText(size_t bytes);  // "8KiB", "64MiB"
std::string triadName(kernels::HostIsa isa, size_t bytes);
std::string memcpyName(size_t bytes);
std::string reduceName(kernels::HostIsa isa, loomDataType_t type, loomRedOp_t op, size_t bytes);
// A sum kernel and the same-ISA triad timed alternately (see kernel_cases.cc). Its
// bytes_per_second is the kernel's; counter "triad_bytes_per_second" the triad's over the same
// stretch of time; "share_of_triad" the kernel's rate over the triad's.
std::string pairedName(kernels::HostIsa isa, loomDataType_t type, size_t bytes);
// The 16- and 32-bit float types whose sums are paired with the triad.
inline constexpr loomDataType_t kPairedTypes[] = {loomFloat32, loomFloat16, loomBfloat16};

// dst, a, b for every case, allocated and touched once (3 x 64 MiB take about half a second to
// fault in). Each starts at a different offset within its page, so that loads and stores of
// the same element index do not collide on the same 4 KiB offset (false store-to-load
// dependencies), as buffers from different allocators rarely do.
class KernelOperands {
 public:
  explicit KernelOperands(size_t bytes);
  char* dst() const { return dst_.data(); }
  const char* a() const { return a_.data() + kOffsetA; }
  const char* b() const { return b_.data() + kOffsetB; }

 private:
  static constexpr size_t kOffsetA = 1344;  // multiples of 64: every vector load stays aligned
  static constexpr size_t kOffsetB = 2688;
  AlignedBuffer dst_, a_, b_;
};

struct KernelSelection {
  std::vector<kernels::HostIsa> isas;  // kernel variants to time (triads: all available)
  bool allOps = false;                 // every op for every type, not only float32
};

// Registers every case with Google Benchmark; `operands` must outlive the run.
void registerKernelCases(const KernelOperands& operands, const KernelSelection& selection);

// The kernels' datatypes in a stable order (all the library supports).
std::vector<loomDataType_t> supportedTypes();

}  // namespace loom::micro
