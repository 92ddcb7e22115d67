// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's kernel launches. The bodies are kernels/device_kernels.h's, the ones the
// CUDA kernels wrap; the emulator calls a body once for every thread of the grid the GPU would
// launch (launchShape), on the stream's worker, in a shuffled order that changes per launch, so
// the grid-stride loops, the 16-byte packs and the tails all run, and code that depends on
// threads running in index order shows.
//
// Everything that can be checked when a kernel is enqueued is: the datatype and op, that each
// operand is memory a kernel can reach (device memory of the stream's device, or pinned host
// memory) with room for `count` elements, and that the destination aliases an input only
// exactly. A buffer freed between the enqueue and the run fails the launch on the worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device/emulated_memory.h"
#include "kernels/device_kernels.h"

namespace loom::device::emulated {

// What the caller asked for; the pointers are the caller's (device or pinned host addresses).
struct KernelRequest {
  kernels::device::KernelKind kind = kernels::device::KernelKind::Reduce;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;     // reduce only
  void* dst = nullptr;
  const void* a = nullptr;      // reduce: a; average: local; premultiply: src
  const void* b = nullptr;      // reduce: b; average: incoming
  size_t count = 0;
  int nranks = 1;               // average, finishAverage
  bool incomingRaw = false;     // average
  const void* scalar = nullptr;  // premultiply: host or device memory
};

// A kernel ready to run: the arguments translated to the host memory behind them, the grid,
// and the order its threads run in.
class KernelLaunch {
 public:
  // Validates `request` for a launch on a stream of `streamDevice`; throws loomInvalidArgument.
  KernelLaunch(const AddressSpace& memory, const KernelRequest& request, int streamDevice);

  const char* name() const { return name_; }  // "reduce kernel", ...
  // On the worker: every thread of the grid, shuffled. Throws loomUnhandledCudaError when an
  // operand was freed after the launch was enqueued.
  void run() const;

 private:
  // Translates one operand of `bytes` bytes and checks a kernel of `streamDevice` can reach it.
  Operand reachable(const AddressSpace& memory, const void* pointer, size_t bytes, const char* role,
                    int streamDevice) const;

  const char* name_;
  kernels::device::KernelBody body_ = nullptr;
  kernels::device::KernelArgs args_;
  kernels::device::LaunchShape shape_;
  std::vector<Operand> operands_;  // kept mapped until the launch is done
  // Thread number i runs as index (first_ + stride_ * i) mod threads: a permutation, since
  // stride_ is coprime to the thread count.
  size_t stride_ = 1;
  size_t first_ = 0;
};

}  // namespace loom::device::emulated
