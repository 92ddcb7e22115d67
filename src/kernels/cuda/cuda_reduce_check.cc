// SPDX-License-Identifier: Apache-2.0
// Standalone GPU check (needs a CUDA GPU, which CI lacks, so it is not a unit test): every
// datatype x op through cudaReduce/cudaDivide against the host kernels, bit for bit (NaN
// payloads of sum/prod aside), on odd sizes, aliased and unaligned pointers.
//
//   ninja -C build kernels/cuda_reduce_check && build/kernels/cuda_reduce_check
// Exit status: 0 all equal, 1 mismatches, 77 no GPU.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/cuda_reduce.h"
#include "kernels/host/host_reduce.h"

namespace {

using namespace loom::kernels;
using loom::opName;  // base/datatype.h
using loom::typeName;
using loom::typeSize;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

// A device buffer; the RAII owner of one cudaMalloc.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) {
    check(cudaMalloc(&data_, bytes ? bytes : 1), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(data_); }

 private:
  void* data_ = nullptr;
};

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

enum class Layout { Separate, DstIsA, DstIsB };

// One device reduction (or division, when divisor > 0) against the host kernels.
bool checkCase(loomDataType_t type, loomRedOp_t op, size_t count, Layout layout, size_t offset,
               int divisor, std::mt19937_64& rng) {
  const size_t size = typeSize(type);
  const size_t bytes = (count + offset) * size;
  std::vector<unsigned char> a(bytes), b(bytes), expected(bytes), got(bytes);
  for (auto& byte : a) byte = static_cast<unsigned char>(rng());
  for (auto& byte : b) byte = static_cast<unsigned char>(rng());

  DeviceBuffer da(bytes), db(bytes), dd(bytes);
  check(cudaMemcpy(da.get(), a.data(), bytes, cudaMemcpyHostToDevice), "copy a");
  check(cudaMemcpy(db.get(), b.data(), bytes, cudaMemcpyHostToDevice), "copy b");
  const size_t skip = offset * size;
  unsigned char* deviceDst = layout == Layout::DstIsA   ? da.get()
                             : layout == Layout::DstIsB ? db.get()
                                                        : dd.get();
  unsigned char* hostDst = layout == Layout::DstIsA   ? a.data()
                           : layout == Layout::DstIsB ? b.data()
                                                      : expected.data();
  if (divisor > 0) {
    cudaDivide(type, deviceDst + skip, da.get() + skip, count, divisor, nullptr);
    divide(type, hostDst + skip, a.data() + skip, count, divisor);
  } else {
    cudaReduce(type, op, deviceDst + skip, da.get() + skip, db.get() + skip, count, nullptr);
    reduce(type, op, hostDst + skip, a.data() + skip, b.data() + skip, count);
  }
  check(cudaDeviceSynchronize(), "kernel");
  check(cudaMemcpy(got.data(), deviceDst, bytes, cudaMemcpyDeviceToHost), "copy back");

  const bool lenientNan = divisor > 0 || op == loomSum || op == loomProd || op == loomAvg;
  for (size_t i = offset; i < count + offset; ++i) {
    const unsigned char* want = hostDst + i * size;
    const unsigned char* have = got.data() + i * size;
    if (std::memcmp(want, have, size) == 0) continue;
    if (lenientNan && isNanAt(type, want) && isNanAt(type, have)) continue;
    std::printf("MISMATCH %s %s count %zu layout %d offset %zu divisor %d at %zu\n", typeName(type),
                opName(op), count, static_cast<int>(layout), offset, divisor, i - offset);
    return false;
  }
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  std::mt19937_64 rng(2024);
  int cases = 0, failures = 0;
  const size_t sizes[] = {0, 1, 7, 33, 1000, 4099, (size_t{1} << 20) + 3};
  for (int t = 0; t < loomNumTypes; ++t) {
    const auto type = static_cast<loomDataType_t>(t);
    if (!typeSupported(type)) continue;
    for (size_t count : sizes) {
      for (size_t offset : {0, 1}) {
        for (int op = 0; op < loomNumOps; ++op) {
          for (Layout layout : {Layout::Separate, Layout::DstIsA, Layout::DstIsB}) {
            ++cases;
            if (!checkCase(type, static_cast<loomRedOp_t>(op), count, layout, offset, 0, rng)) {
              ++failures;
            }
          }
        }
        for (int divisor : {1, 3, 8}) {
          ++cases;
          if (!checkCase(type, loomSum, count, Layout::Separate, offset, divisor, rng)) ++failures;
        }
      }
    }
  }
  try {
    cudaReduce(static_cast<loomDataType_t>(loomNumTypes), loomSum, nullptr, nullptr, nullptr, 0, nullptr);
    std::printf("MISMATCH an unknown datatype was accepted\n");
    ++failures;
  } catch (const loom::Error& error) {
    if (error.code() != loomInvalidArgument) ++failures;
  }
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
