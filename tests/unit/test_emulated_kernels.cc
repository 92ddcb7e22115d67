// SPDX-License-Identifier: Apache-2.0
// The emulated GPU's kernels (device/emulated_kernels.h) against the host kernels, bit for bit:
// every datatype and op of reduce, average and finishAverage, premultiply with its scalar in
// host, pinned and device memory, for counts with and without a tail, on 16-byte aligned
// operands (packed) and unaligned ones, in place and not, and past the grid's thread count
// (grid-stride loops); and the launches refused when enqueued.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "base/device_runtime.h"
#include "base/error.h"
#include "kernels/host/canonical_reduce.h"
#include "kernels/host/host_reduce.h"
#include "kernels/host/premultiply.h"
#include "tests/support/emulated_test_util.h"

namespace loom::test {
namespace {

// The host runs the same operators, but a vectorised host kernel may order a commutative
// operation's operands differently, so two NaNs may differ in payload (reduce_ops.h): NaN
// matches NaN, everything else bit for bit.
bool isNan(loomDataType_t type, const unsigned char* value) {
  uint64_t bits = 0;
  std::memcpy(&bits, value, typeSize(type));
  switch (type) {
    case loomFloat32: return (bits & 0x7fffffffu) > 0x7f800000u;
    case loomFloat64: return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case loomFloat16: return (bits & 0x7fffu) > 0x7c00u;
    case loomBfloat16: return (bits & 0x7fffu) > 0x7f80u;
    case loomFloat8e4m3: return (bits & 0x7fu) == 0x7fu;
    case loomFloat8e5m2: return (bits & 0x7fu) > 0x7cu;
    default: return false;
  }
}
void expectSameElements(loomDataType_t type, const unsigned char* got, const unsigned char* want, size_t count,
                        const std::string& what) {
  const size_t size = typeSize(type);
  size_t mismatches = 0;
  for (size_t i = 0; i < count && mismatches < 5; ++i) {
    const unsigned char* g = got + i * size;
    const unsigned char* w = want + i * size;
    if (std::memcmp(g, w, size) == 0 || (isNan(type, g) && isNan(type, w))) continue;
    ++mismatches;
    ADD_FAILURE() << what << ": element " << i << " of " << count << " differs";
  }
}

const loomDataType_t kTypes[] = {loomInt8,   loomUint8,   loomInt32,   loomUint32,    loomInt64,     loomUint64,
                                 loomFloat16, loomFloat32, loomFloat64, loomBfloat16, loomFloat8e4m3, loomFloat8e5m2};
const size_t kCounts[] = {0, 1, 7, 33, 1023, 4097};
constexpr size_t kMaxCount = 4097;

// Byte offsets of (dst, a, b) into their buffers, in elements of the type or bytes: the first
// and last are 16-byte aligned (packed), the others are not.
struct Layout {
  size_t dst, a, b;
  bool elements;  // offsets count elements (else bytes)
};
const Layout kLayouts[] = {{0, 0, 0, false}, {1, 1, 1, true}, {0, 1, 0, true}, {16, 32, 48, false}};

// Device buffers with room for any case, and a stream.
class EmulatedKernels : public ::testing::Test {
 protected:
  static constexpr size_t kRoom = kMaxCount * 8 + 64;
  StreamHandle stream_;
  DeviceBuffer dst_{kRoom}, a_{kRoom}, b_{kRoom};

  // Enqueues a copy of `from` to device memory: `from` must live until the stream has run it
  // (download() synchronizes), as the emulator copies when the stream gets there.
  void upload(const DeviceBuffer& to, size_t offset, const std::vector<unsigned char>& from) {
    rt().copyAsync(to.get() + offset, from.data(), from.size(), stream_);
  }
  void upload(const DeviceBuffer&, size_t, std::vector<unsigned char>&&) = delete;  // a temporary dies first
  std::vector<unsigned char> download(const DeviceBuffer& from, size_t offset, size_t bytes) {
    std::vector<unsigned char> out(bytes);
    rt().copyAsync(out.data(), from.get() + offset, bytes, stream_);
    rt().synchronize(stream_, kSyncMs);
    return out;
  }
};

TEST_F(EmulatedKernels, ReduceEveryTypeAndOp) {
  uint64_t seed = 100;
  for (loomDataType_t type : kTypes) {
    const size_t size = typeSize(type);
    for (loomRedOp_t op : {loomSum, loomProd, loomMax, loomMin, loomAvg}) {
      for (size_t count : kCounts) {
        for (const Layout& layout : kLayouts) {
          for (bool inPlace : {false, true}) {
            const size_t unit = layout.elements ? size : 1;
            const size_t offA = layout.a * unit, offB = layout.b * unit;
            const size_t offD = inPlace ? offA : layout.dst * unit;
            const std::string what = std::string(typeName(type)) + " " + opName(op) + " count " +
                                     std::to_string(count) + " offsets " + std::to_string(offD) + "/" +
                                     std::to_string(offA) + "/" + std::to_string(offB) + (inPlace ? " in place" : "");
            const auto x = randomBytes(count * size, ++seed), y = randomBytes(count * size, ++seed);
            const auto garbage = randomBytes(count * size, ++seed);  // lives until download()
            upload(a_, offA, x);
            upload(b_, offB, y);
            if (!inPlace) upload(dst_, offD, garbage);
            const DeviceBuffer& dst = inPlace ? a_ : dst_;
            rt().reduceAsync(type, op, dst.get() + offD, a_.get() + offA, b_.get() + offB, count, stream_);
            const auto got = download(dst, offD, count * size);
            std::vector<unsigned char> want(count * size + 1);
            kernels::reduce(type, op, want.data(), x.data(), y.data(), count);
            expectSameElements(type, got.data(), want.data(), count, what);
          }
        }
      }
    }
  }
}

TEST_F(EmulatedKernels, GridStrideLoopOnLargeCounts) {
  // More packs (and elements) than the grid's 4096 x 256 threads: every thread loops.
  constexpr size_t kCount = 5'000'003;
  DeviceBuffer x(kCount * 4 + 64), y(kCount * 4 + 64);
  std::vector<float> hx(kCount), hy(kCount), want(kCount), got(kCount);
  for (size_t i = 0; i < kCount; ++i) hx[i] = float(i % 1000) * 0.5f, hy[i] = float(i % 777) - 300.0f;
  kernels::reduce(loomFloat32, loomSum, want.data(), hx.data(), hy.data(), kCount);
  for (size_t offset : {0, 4}) {  // packed, then not
    rt().copyAsync(x.get() + offset, hx.data(), kCount * 4, stream_);
    rt().copyAsync(y.get() + offset, hy.data(), kCount * 4, stream_);
    rt().reduceAsync(loomFloat32, loomSum, x.get() + offset, x.get() + offset, y.get() + offset, kCount, stream_);
    rt().copyAsync(got.data(), x.get() + offset, kCount * 4, stream_);
    rt().synchronize(stream_, kSyncMs);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), kCount * 4), 0) << "offset " << offset;
  }
}

TEST_F(EmulatedKernels, AverageAndFinishAverage) {
  uint64_t seed = 5000;
  for (loomDataType_t type : kTypes) {
    const size_t size = typeSize(type);
    for (size_t count : kCounts) {
      for (int nranks : {1, 3, 8}) {
        for (bool incomingRaw : {false, true}) {
          for (const Layout& layout : {kLayouts[0], kLayouts[1]}) {
            const size_t unit = layout.elements ? size : 1;
            const std::string what = std::string(typeName(type)) + " count " + std::to_string(count) + " nranks " +
                                     std::to_string(nranks) + (incomingRaw ? " raw" : "") + " offset " +
                                     std::to_string(layout.a * unit);
            const auto local = randomBytes(count * size, ++seed), incoming = randomBytes(count * size, ++seed);
            upload(a_, layout.a * unit, local);
            upload(b_, layout.b * unit, incoming);
            rt().averageAsync(type, dst_.get() + layout.dst * unit, a_.get() + layout.a * unit,
                              b_.get() + layout.b * unit, count, nranks, incomingRaw, stream_);
            const auto got = download(dst_, layout.dst * unit, count * size);
            std::vector<unsigned char> want(count * size + 1);
            kernels::reduceAverage(type, want.data(), local.data(), incoming.data(), count, nranks, incomingRaw);
            expectSameElements(type, got.data(), want.data(), count, "average " + what);

            rt().finishAverageAsync(type, dst_.get() + layout.dst * unit, count, nranks, stream_);
            const auto finished = download(dst_, layout.dst * unit, count * size);
            kernels::finishAverage(type, want.data(), count, nranks);
            expectSameElements(type, finished.data(), want.data(), count, "finishAverage " + what);
          }
        }
      }
    }
  }
}

TEST_F(EmulatedKernels, PremultiplyHostPinnedAndDeviceScalar) {
  uint64_t seed = 9000;
  PinnedBuffer pinnedScalar(8);
  DeviceBuffer deviceScalar(8);
  for (loomDataType_t type : kTypes) {
    const size_t size = typeSize(type);
    for (size_t count : kCounts) {
      for (const Layout& layout : {kLayouts[0], kLayouts[1]}) {
        for (int where = 0; where < 3; ++where) {  // host, pinned, device
          const size_t unit = layout.elements ? size : 1;
          const auto src = randomBytes(count * size, ++seed);
          const auto scalarBytes = randomBytes(size, ++seed);
          uint64_t scalarBits = 0;
          std::memcpy(&scalarBits, scalarBytes.data(), size);
          const void* scalar = &scalarBits;
          if (where == 1) scalar = std::memcpy(pinnedScalar.get(), scalarBytes.data(), size);
          if (where == 2) {
            rt().copyAsync(deviceScalar.get(), scalarBytes.data(), size, stream_);
            scalar = deviceScalar.get();
          }
          upload(a_, layout.a * unit, src);
          rt().premultiplyAsync(type, dst_.get() + layout.dst * unit, a_.get() + layout.a * unit, count, scalar,
                                stream_);
          const auto got = download(dst_, layout.dst * unit, count * size);
          std::vector<unsigned char> want(count * size + 1);
          kernels::premultiply(type, want.data(), src.data(), count, scalarBits);
          expectSameElements(type, got.data(), want.data(), count,
                             std::string(typeName(type)) + " count " + std::to_string(count) + " scalar in " +
                                 (where == 0 ? "host" : where == 1 ? "pinned" : "device") + " memory");
        }
      }
    }
  }
}

TEST_F(EmulatedKernels, ScalarIsReadWhenHostCallsOrWhenKernelRuns) {
  const float src[4] = {1, 2, 3, 4};
  rt().copyAsync(a_.get(), src, sizeof(src), stream_);
  rt().synchronize(stream_, kSyncMs);
  float hostScalar = 2.0f;
  const float deviceValue = 10.0f;
  DeviceBuffer deviceScalar(4);
  Gate gate;
  gate.block(stream_);
  // Host scalar: read at the call, so changing it afterwards does not matter.
  rt().premultiplyAsync(loomFloat32, dst_.get(), a_.get(), 4, &hostScalar, stream_);
  hostScalar = 100.0f;
  float hostResult[4], deviceResult[4];
  rt().copyAsync(hostResult, dst_.get(), sizeof(hostResult), stream_);
  // Device scalar: read when the kernel runs, after the copy enqueued before it.
  rt().copyAsync(deviceScalar.get(), &deviceValue, 4, stream_);
  rt().premultiplyAsync(loomFloat32, dst_.get(), a_.get(), 4, deviceScalar.get(), stream_);
  rt().copyAsync(deviceResult, dst_.get(), sizeof(deviceResult), stream_);
  gate.open();
  rt().synchronize(stream_, kSyncMs);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(hostResult[i], 2.0f * src[i]);
    EXPECT_EQ(deviceResult[i], 10.0f * src[i]);
  }
}

TEST_F(EmulatedKernels, BadLaunchesFailWhenEnqueued) {
  std::vector<char> host(1024);
  PinnedBuffer pinned(4096);
  expectError([&] { rt().reduceAsync(loomNumTypes, loomSum, dst_.get(), a_.get(), b_.get(), 4, stream_); },
              loomInvalidArgument, {"reduce kernel", "datatype"});
  expectError([&] { rt().reduceAsync(loomFloat32, loomNumOps, dst_.get(), a_.get(), b_.get(), 4, stream_); },
              loomInvalidArgument, {"reduce kernel", "op 5"});
  expectError([&] { rt().averageAsync(loomFloat32, dst_.get(), a_.get(), b_.get(), 4, 0, false, stream_); },
              loomInvalidArgument, {"nranks"});
  // Beyond the allocation: count * typeSize is checked against each operand.
  expectError([&] { rt().reduceAsync(loomFloat64, loomSum, dst_.get(), a_.get(), b_.get() + 8, kRoom / 8, stream_); },
              loomInvalidArgument, {"input b", "past the allocation's end"});
  expectError([&] { rt().reduceAsync(loomInt8, loomSum, host.data(), a_.get(), b_.get(), 16, stream_); },
              loomInvalidArgument, {"destination", "pageable host memory"});
  expectError([&] { rt().reduceAsync(loomInt8, loomSum, dst_.get() + 1, dst_.get(), b_.get(), 16, stream_); },
              loomInvalidArgument, {"partially overlaps"});
  expectError([&] { rt().premultiplyAsync(loomInt8, dst_.get(), a_.get(), 16, nullptr, stream_); },
              loomInvalidArgument, {"scalar", "null"});
  void* freed = rt().allocDevice(64);
  rt().freeDevice(freed);
  expectError([&] { rt().reduceAsync(loomInt8, loomSum, dst_.get(), freed, b_.get(), 16, stream_); },
              loomInvalidArgument, {"input a", "was freed"});
  rt().setCurrentDevice(1);
  DeviceBuffer other(64);
  rt().setCurrentDevice(0);
  expectError([&] { rt().reduceAsync(loomInt8, loomSum, dst_.get(), other.get(), b_.get(), 16, stream_); },
              loomInvalidArgument, {"memory of emulated device 1", "peer"});
  // Pinned memory is reachable, and a launch over nothing looks at no pointer.
  rt().reduceAsync(loomInt8, loomSum, pinned.get(), pinned.get(), b_.get(), 16, stream_);
  rt().reduceAsync(loomInt8, loomSum, nullptr, nullptr, nullptr, 0, stream_);
  rt().synchronize(stream_, kSyncMs);
}
}  // namespace
}  // namespace loom::test
