// SPDX-License-Identifier: Apache-2.0
#include "device/cuda_vmm.h"

#if LOOM_CUDA_DRIVER

#include <cstdint>
#include <string>

#include "base/device_runtime.h"
#include "base/error.h"

namespace loom::device::cuda {
namespace {

CUdeviceptr addressOf(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

// What createShareable has made so far; the destructor undoes it, in reverse, unless the
// allocation was handed out. Failures while undoing are ignored: the error being thrown is the
// one the caller needs.
struct Partial {
  explicit Partial(const Driver& driver) : driver(driver) {}
  ~Partial() {
    if (done) return;
    if (mapped) (void)driver.cuMemUnmap(address, size);
    if (address != 0) (void)driver.cuMemAddressFree(address, size);
    if (created) (void)driver.cuMemRelease(handle);
  }
  Partial(const Partial&) = delete;
  Partial& operator=(const Partial&) = delete;

  const Driver& driver;
  CUmemGenericAllocationHandle handle = 0;
  bool created = false;
  CUdeviceptr address = 0;
  size_t size = 0;
  bool mapped = false;
  bool done = false;
};

}  // namespace

void* createShareable(const Driver& driver, CUdevice device, int ordinal, size_t bytes) {
  const auto doing = [&] {
    return "allocating " + std::to_string(bytes) + " bytes of shareable device memory on device " +
           std::to_string(ordinal) + " for loomMemAlloc";
  };
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  // What makes it exportable later (cuMemExportToShareableHandle); it must be asked for here.
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  driver.check(driver.cuMemGetAllocationGranularity(&granularity, &prop,
                                                    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
               "cuMemGetAllocationGranularity", doing);
  if (granularity == 0) granularity = size_t{2} << 20;  // what every GPU reports; never divide by 0
  if (bytes > SIZE_MAX - (granularity - 1)) {
    throw Error(loomUnhandledCudaError,
                "out of memory: " + doing() + ": more than an address space holds");
  }
  Partial made(driver);
  made.size = (bytes + granularity - 1) / granularity * granularity;
  driver.check(driver.cuMemCreate(&made.handle, made.size, &prop, 0), "cuMemCreate", doing);
  made.created = true;
  driver.check(driver.cuMemAddressReserve(&made.address, made.size, granularity, 0, 0),
               "cuMemAddressReserve", doing);
  driver.check(driver.cuMemMap(made.address, made.size, 0, made.handle, 0), "cuMemMap", doing);
  made.mapped = true;
  // A mapping has no access until it is granted, not even for the device that holds it.
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  driver.check(driver.cuMemSetAccess(made.address, made.size, &access, 1), "cuMemSetAccess", doing);
  made.done = true;
  return reinterpret_cast<void*>(made.address);
}

void destroyShareable(const Driver& driver, void* pointer) {
  const CUdeviceptr address = addressOf(pointer);
  const auto doing = [&] {
    return "freeing loomMemAlloc's device memory at " + pointerText(pointer);
  };
  CUdeviceptr base = 0;
  size_t size = 0;
  driver.check(driver.cuMemGetAddressRange(&base, &size, address), "cuMemGetAddressRange", doing);
  CUmemGenericAllocationHandle handle = 0;
  driver.check(driver.cuMemRetainAllocationHandle(&handle, pointer), "cuMemRetainAllocationHandle",
               doing);
  // The retained handle is a second reference to the memory (the first is cuMemCreate's): both
  // go, and the memory is freed once the mapping is gone too.
  const char* failedCall = nullptr;
  CUresult failed = CUDA_SUCCESS;
  const auto note = [&](CUresult result, const char* call) {
    if (result != CUDA_SUCCESS && failed == CUDA_SUCCESS) failed = result, failedCall = call;
  };
  note(driver.cuMemUnmap(base, size), "cuMemUnmap");
  note(driver.cuMemRelease(handle), "cuMemRelease");
  note(driver.cuMemRelease(handle), "cuMemRelease");
  note(driver.cuMemAddressFree(base, size), "cuMemAddressFree");
  if (failed != CUDA_SUCCESS) driver.fail(failedCall, failed, doing());
}

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
