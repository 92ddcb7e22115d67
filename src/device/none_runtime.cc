// SPDX-License-Identifier: Apache-2.0
// The runtime of a process without CUDA (and without LOOM_DEVICE=emulated): Loom takes host
// buffers exactly as it always has. What it can recognise as not host memory without a driver
// (a non-canonical address, as every emulated device pointer is) is a clear error rather than a
// crash in a copy.
#include <string>

#include "base/error.h"
#include "device/device_select.h"

namespace loom::device {
namespace {

[[noreturn]] void noDevice(const char* what) {
  throw Error(loomInvalidUsage, std::string("no CUDA driver: ") + what +
                                    " needs a device runtime (this process runs LOOM_DEVICE=none: no "
                                    "libcuda.so.1 with a GPU was found, or none was asked for)");
}

class NoneRuntime final : public DeviceRuntime {
 public:
  const char* name() const override { return "none"; }
  bool available() const override { return false; }
  int deviceCount() override { return 0; }
  int currentDevice() override { return 0; }
  void setCurrentDevice(int device) override {
    if (device != 0) noDevice(("device " + std::to_string(device)).c_str());
  }
  MemoryInfo classify(const void* pointer) override {
    if (isCanonicalHostAddress(pointer)) return MemoryInfo{};
    throw Error(loomInvalidArgument,
                "no CUDA driver: buffer " + pointerText(pointer) +
                    " is not a host address (a device pointer?), and this process has no device runtime "
                    "(LOOM_DEVICE=none, or no libcuda.so.1 with a GPU was found)");
  }
  void* allocDevice(size_t) override { noDevice("allocating device memory"); }
  void freeDevice(void*) noexcept override {}
  void* allocPinnedHost(size_t) override { noDevice("allocating pinned host memory"); }
  void freePinnedHost(void*) noexcept override {}
  DeviceStream createStream() override { noDevice("a device stream"); }
  void destroyStream(DeviceStream) noexcept override {}
  void synchronize(DeviceStream, int) override { noDevice("a device stream"); }
  void copyAsync(void*, const void*, size_t, DeviceStream) override { noDevice("a device copy"); }
  void reduceAsync(loomDataType_t, loomRedOp_t, void*, const void*, const void*, size_t, DeviceStream) override {
    noDevice("a device kernel");
  }
  void averageAsync(loomDataType_t, void*, const void*, const void*, size_t, int, bool, DeviceStream) override {
    noDevice("a device kernel");
  }
  void finishAverageAsync(loomDataType_t, void*, size_t, int, DeviceStream) override { noDevice("a device kernel"); }
  void premultiplyAsync(loomDataType_t, void*, const void*, size_t, const void*, DeviceStream) override {
    noDevice("a device kernel");
  }
  DeviceEvent createEvent() override { noDevice("a device event"); }
  void destroyEvent(DeviceEvent) noexcept override {}
  void record(DeviceEvent, DeviceStream) override { noDevice("a device event"); }
  void streamWait(DeviceStream, DeviceEvent) override { noDevice("a device event"); }
  bool query(DeviceEvent) override { noDevice("a device event"); }
};

}  // namespace

DeviceRuntime& noneRuntime() {
  static NoneRuntime runtime;
  return runtime;
}

}  // namespace loom::device
