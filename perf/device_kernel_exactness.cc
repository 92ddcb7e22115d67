// SPDX-License-Identifier: Apache-2.0
#include "perf/device_kernel_exactness.h"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/premultiply.h"

namespace loom::perf {
namespace {

constexpr int kTimeoutMs = 60000;
constexpr size_t kGuard = 16;  // elements after the range, which no kernel may write
constexpr size_t kMaxOffset = 1;
constexpr size_t kFullSizes[] = {0, 1, 7, 33, 1000, 4099, (size_t{1} << 20) + 3};
constexpr size_t kQuickSizes[] = {0, 1, 7, 33, 1000, 4099};

enum class Kind { Reduce, Average, FinishAverage, PremultiplyHost, PremultiplyDevice };
enum class Layout { Separate, DstIsA, DstIsB };

bool isNanAt(loomDataType_t type, const unsigned char* bytes) {
  uint64_t bits = 0;
  std::memcpy(&bits, bytes, typeSize(type));
  switch (type) {
    case loomFloat16:
      return (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff) != 0;
    case loomBfloat16:
      return (bits & 0x7f80) == 0x7f80 && (bits & 0x007f) != 0;
    case loomFloat32:
      return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0;
    case loomFloat64:
      return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
             (bits & 0x000fffffffffffffull) != 0;
    case loomFloat8e4m3:
      return (bits & 0x7f) == 0x7f;
    case loomFloat8e5m2:
      return (bits & 0x7f) > 0x7c;
    default:
      return false;
  }
}

// A device buffer, owned.
class DeviceBuffer {
 public:
  DeviceBuffer(DeviceRuntime& runtime, size_t bytes)
      : runtime_(runtime), data_(runtime.allocDevice(bytes)) {}
  ~DeviceBuffer() { runtime_.freeDevice(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(data_); }

 private:
  DeviceRuntime& runtime_;
  void* data_;
};

struct Case {
  Kind kind = Kind::Reduce;
  loomDataType_t type = loomFloat32;
  loomRedOp_t op = loomSum;
  size_t count = 0;
  size_t offset =
      0;  // elements: 1 makes every pointer unaligned, so the kernel takes its unpacked path
  Layout layout = Layout::Separate;
  int nranks = 1;
  bool incomingRaw = false;

  std::string text() const {
    static const char* const kinds[] = {"reduce", "average", "finishAverage",
                                        "premultiply (host scalar)", "premultiply (device scalar)"};
    static const char* const layouts[] = {"dst separate", "dst = a", "dst = b"};
    std::string out = std::string(kinds[static_cast<int>(kind)]) + " " + typeName(type);
    if (kind == Kind::Reduce) out += std::string(" ") + opName(op);
    out += " count " + std::to_string(count) + " offset " + std::to_string(offset) + " " +
           layouts[static_cast<int>(layout)];
    if (kind == Kind::Average || kind == Kind::FinishAverage)
      out += " nranks " + std::to_string(nranks);
    if (kind == Kind::Average) out += incomingRaw ? " incoming raw" : " incoming scaled";
    return out;
  }
};

class Checker {
 public:
  Checker(DeviceRuntime& runtime, DeviceStream stream, size_t maxCount, std::FILE* out)
      : runtime_(runtime),
        stream_(stream),
        out_(out),
        capacity_((maxCount + kMaxOffset + kGuard) * 8),
        a_(runtime, capacity_),
        b_(runtime, capacity_),
        dst_(runtime, capacity_),
        scalar_(runtime, 8) {}

  // One case on the device and on the host; true when every byte of the buffer that holds the
  // result agrees (NaN payloads aside where the operators leave them unspecified).
  bool run(const Case& c, long* nanPayloads) {
    const size_t size = typeSize(c.type);
    const size_t bytes = (c.offset + c.count + kGuard) * size;
    std::vector<unsigned char> a(bytes), b(bytes), dst(bytes), got(bytes);
    for (auto* buffer : {&a, &b, &dst}) fillRandom(*buffer);
    const uint64_t scalarBits = rng_();
    upload(a_.get(), a, bytes);
    upload(b_.get(), b, bytes);
    upload(dst_.get(), dst, bytes);
    runtime_.copyAsync(scalar_.get(), &scalarBits, sizeof(scalarBits), stream_);

    unsigned char* deviceOut = c.layout == Layout::DstIsA   ? a_.get()
                               : c.layout == Layout::DstIsB ? b_.get()
                                                            : dst_.get();
    std::vector<unsigned char>& hostOut = c.layout == Layout::DstIsA   ? a
                                          : c.layout == Layout::DstIsB ? b
                                                                       : dst;
    const size_t skip = c.offset * size;
    void* dd = deviceOut + skip;
    const unsigned char* da = a_.get() + skip;
    const unsigned char* db = b_.get() + skip;
    unsigned char* hd = hostOut.data() + skip;
    const unsigned char* ha = a.data() + skip;
    const unsigned char* hb = b.data() + skip;
    switch (c.kind) {
      case Kind::Reduce:
        runtime_.reduceAsync(c.type, c.op, dd, da, db, c.count, stream_);
        kernels::reduce(c.type, c.op, hd, ha, hb, c.count);
        break;
      case Kind::Average:
        runtime_.averageAsync(c.type, dd, da, db, c.count, c.nranks, c.incomingRaw, stream_);
        kernels::reduceAverage(c.type, hd, ha, hb, c.count, c.nranks, c.incomingRaw);
        break;
      case Kind::FinishAverage:
        runtime_.finishAverageAsync(c.type, dd, c.count, c.nranks, stream_);
        kernels::finishAverage(c.type, hd, c.count, c.nranks);
        break;
      case Kind::PremultiplyHost:
      case Kind::PremultiplyDevice: {
        const void* scalar =
            c.kind == Kind::PremultiplyHost ? static_cast<const void*>(&scalarBits) : scalar_.get();
        runtime_.premultiplyAsync(c.type, dd, da, c.count, scalar, stream_);
        kernels::premultiply(c.type, hd, ha, c.count, scalarBits);
        break;
      }
    }
    runtime_.copyAsync(got.data(), deviceOut, bytes, stream_);
    runtime_.synchronize(stream_, kTimeoutMs);

    // Sum and prod leave a NaN's payload unspecified (reduce_ops.h), and max/min produce theirs
    // with a + b, and premultiply with prod: the GPU's canonical NaN differs from the x86
    // payload. Average and finishAverage canonicalize NaNs (canonical_reduce.h): exact.
    const bool nanLenient = c.kind == Kind::Reduce || c.kind == Kind::PremultiplyHost ||
                            c.kind == Kind::PremultiplyDevice;
    for (size_t i = 0; i < c.offset + c.count + kGuard; ++i) {
      const unsigned char* want = hostOut.data() + i * size;
      const unsigned char* have = got.data() + i * size;
      if (std::memcmp(want, have, size) == 0) continue;
      const bool inRange = i >= c.offset && i < c.offset + c.count;
      if (inRange && nanLenient && isNanAt(c.type, want) && isNanAt(c.type, have)) {
        ++*nanPayloads;
        continue;
      }
      uint64_t wantBits = 0, haveBits = 0;
      std::memcpy(&wantBits, want, size);
      std::memcpy(&haveBits, have, size);
      std::fprintf(out_, "MISMATCH %s: element %zd%s: host 0x%" PRIx64 ", device 0x%" PRIx64 "\n",
                   c.text().c_str(), static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(c.offset),
                   inRange ? "" : " (outside the range: written by the kernel)", wantBits,
                   haveBits);
      return false;
    }
    return true;
  }

 private:
  // Every bit pattern, NaNs, infinities and subnormals included; 8 bytes per draw.
  void fillRandom(std::vector<unsigned char>& bytes) {
    for (size_t i = 0; i < bytes.size(); i += sizeof(uint64_t)) {
      const uint64_t bits = rng_();
      std::memcpy(bytes.data() + i, &bits, std::min(sizeof(bits), bytes.size() - i));
    }
  }

  void upload(unsigned char* device, const std::vector<unsigned char>& host, size_t bytes) {
    runtime_.copyAsync(device, host.data(), bytes, stream_);
    runtime_.synchronize(stream_, kTimeoutMs);  // the host vector may change before the copy runs
  }

  DeviceRuntime& runtime_;
  DeviceStream stream_;
  std::FILE* out_;
  size_t capacity_;
  DeviceBuffer a_, b_, dst_, scalar_;
  std::mt19937_64 rng_{2024};
};

}  // namespace

ExactnessSummary checkDeviceKernels(DeviceRuntime& runtime, DeviceStream stream, bool quick,
                                    std::FILE* out) {
  std::vector<size_t> sizes(quick ? std::begin(kQuickSizes) : std::begin(kFullSizes),
                            quick ? std::end(kQuickSizes) : std::end(kFullSizes));
  Checker checker(runtime, stream, sizes.back(), out);
  ExactnessSummary total;
  std::fprintf(
      out,
      "| datatype | cases | failed | NaN payloads differing (allowed) |\n|---|---:|---:|---:|\n");
  for (int t = 0; t < loomNumTypes; ++t) {
    const auto type = static_cast<loomDataType_t>(t);
    std::vector<Case> cases;
    for (size_t count : sizes) {
      for (size_t offset = 0; offset <= kMaxOffset; ++offset) {
        Case base;
        base.type = type;
        base.count = count;
        base.offset = offset;
        for (int op = 0; op < loomNumOps; ++op) {
          for (Layout layout : {Layout::Separate, Layout::DstIsA, Layout::DstIsB}) {
            Case c = base;
            c.op = static_cast<loomRedOp_t>(op);
            c.layout = layout;
            cases.push_back(c);
          }
        }
        for (int nranks : {1, 3, 8}) {
          for (bool raw : {false, true}) {
            for (Layout layout : {Layout::Separate, Layout::DstIsA}) {
              Case c = base;
              c.kind = Kind::Average;
              c.nranks = nranks;
              c.incomingRaw = raw;
              c.layout = layout;
              cases.push_back(c);
            }
          }
          Case finish = base;
          finish.kind = Kind::FinishAverage;
          finish.nranks = nranks;
          finish.layout = Layout::DstIsA;  // in place
          cases.push_back(finish);
        }
        for (Kind kind : {Kind::PremultiplyHost, Kind::PremultiplyDevice}) {
          for (Layout layout : {Layout::Separate, Layout::DstIsA}) {
            Case c = base;
            c.kind = kind;
            c.layout = layout;
            cases.push_back(c);
          }
        }
      }
    }
    ExactnessSummary row;
    for (const Case& c : cases) {
      ++row.cases;
      if (!checker.run(c, &row.nanPayloads)) ++row.failures;
    }
    char line[160];
    std::snprintf(line, sizeof(line), "| %s | %d | %d | %ld |\n", typeName(type), row.cases,
                  row.failures, row.nanPayloads);
    std::fputs(line, out);
    std::fflush(out);
    total.cases += row.cases;
    total.failures += row.failures;
    total.nanPayloads += row.nanPayloads;
  }
  std::fprintf(out, "| **all** | %d | %d | %ld |\n", total.cases, total.failures,
               total.nanPayloads);
  return total;
}

}  // namespace loom::perf
