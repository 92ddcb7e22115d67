// SPDX-License-Identifier: Apache-2.0
// The runtime of a process without CUDA (and without LOOM_DEVICE=emulated): Loom takes host
// buffers exactly as it always has. What it can recognise as not host memory without a driver
// (a non-canonical address, as every emulated device pointer is) is a clear error rather than a
// crash in a copy.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
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

size_t pageBytes() {
  static const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

// `bytes` rounded up to whole pages; 0 when that would not fit a size_t.
size_t wholePages(size_t bytes) {
  const size_t page = pageBytes();
  return bytes > SIZE_MAX - (page - 1) ? 0 : (bytes + page - 1) / page * page;
}

constexpr size_t kHugePageBytes = size_t{2} << 20;

// Faults in every page of a fresh anonymous mapping: one madvise where the kernel has
// MADV_POPULATE_WRITE (Linux 5.14), else a write to each page (they read as zero already).
void prefault(void* mapped, size_t length) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(mapped, length, MADV_POPULATE_WRITE) == 0) return;
  // Out of memory: touching the pages would end in the OOM killer, not an error.
  if (errno == ENOMEM || errno == EFAULT) {
    throwSystem("faulting in " + std::to_string(length) + " bytes of host pages (madvise)");
  }
#endif
  auto* bytes = static_cast<volatile char*>(mapped);
  for (size_t offset = 0; offset < length; offset += pageBytes()) bytes[offset] = 0;
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
  // Host pages of their own mapping, page-aligned whatever the size, faulted in now so that the
  // first call on the buffer does not pay for it (a 4 KiB fault costs about 11 us on the CI
  // machine); a large mapping asks for 2 MiB pages first, which take 512 times fewer faults.
  void* allocShareable(size_t bytes) override {
    const size_t length = wholePages(bytes);
    void* mapped = length == 0 ? MAP_FAILED
                               : mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) {
      const int err = length == 0 ? ENOMEM : errno;
      throwSystem("allocating " + std::to_string(bytes) + " bytes of host pages (mmap)", err);
    }
    if (length >= kHugePageBytes) (void)madvise(mapped, length, MADV_HUGEPAGE);  // advice only
    try {
      prefault(mapped, length);
    } catch (...) {
      (void)munmap(mapped, length);
      throw;
    }
    return mapped;
  }
  void freeShareable(void* pointer, size_t bytes) override {
    if (pointer == nullptr) return;
    if (munmap(pointer, wholePages(bytes)) != 0) {
      throwSystem("freeing " + std::to_string(bytes) + " bytes of host pages at " + pointerText(pointer) +
                  " (munmap)");
    }
  }
  DeviceStream createStream() override { noDevice("a device stream"); }
  void destroyStream(DeviceStream) noexcept override {}
  void synchronize(DeviceStream, int) override { noDevice("a device stream"); }
  void synchronizeApplicationStream(void*, int) override {
    throwUsage("there is no CUDA runtime in this process (no device runtime is active: LOOM_DEVICE), so a "
               "CUDA stream cannot be waited for; pass the NULL stream (0) with host buffers");
  }
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
