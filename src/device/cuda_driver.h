// SPDX-License-Identifier: Apache-2.0
// The CUDA driver (libcuda.so.1), opened with dlopen at first use, so that libloom has no
// NEEDED entry for any CUDA library and loads on machines without one.
//
// Only cuGetProcAddress is taken with dlsym; every other entry point comes from it, asked for
// the ABI of CUDA 12.0 (kCudaAbiVersion). Plain dlsym would bind the wrong ABI: cuda.h maps
// names to versioned symbols (cuMemAlloc is cuMemAlloc_v2, whose size arguments are 64-bit,
// while the symbol "cuMemAlloc" is the 32-bit one of CUDA 2.0), and cuGetProcAddress is the
// driver's own answer to "the function of this name, as of this CUDA version". The table's
// types are cudaTypedefs.h's PFN_<name>_v<version> of that same version: the unversioned PFN
// names follow the newest header (CUDA 13's cuCtxGetDevice takes a context argument that 12.0's
// does not), so they would not match what the driver hands out for 12.0.
//
// Compile-time headers only: cuda.h and cudaTypedefs.h from the toolkit. Without them (or older
// than CUDA 12.0) LOOM_CUDA_DRIVER is 0, nothing here is declared, and the CUDA runtime reports
// "built without CUDA".
#pragma once

#if defined(__has_include)
#if __has_include(<cuda.h>) && __has_include(<cudaTypedefs.h>)
#include <cuda.h>
#include <cudaTypedefs.h>
#endif
#endif

#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000
#define LOOM_CUDA_DRIVER 1
#else
#define LOOM_CUDA_DRIVER 0
#endif

#if LOOM_CUDA_DRIVER

#include <string>
#include <utility>

namespace loom::device::cuda {

// The ABI every entry point is resolved at (cuGetProcAddress's cudaVersion).
inline constexpr int kCudaAbiVersion = 12000;

// X(name, version): the entry points Loom calls, each with the version suffix of its
// cudaTypedefs.h PFN type as of CUDA 12.0.
#define LOOM_CUDA_DRIVER_FUNCTIONS(X)     \
  X(cuGetErrorName, 6000)                 \
  X(cuGetErrorString, 6000)               \
  X(cuInit, 2000)                         \
  X(cuDriverGetVersion, 2020)             \
  X(cuDeviceGet, 2000)                    \
  X(cuDeviceGetCount, 2000)               \
  X(cuDeviceGetName, 2000)                \
  X(cuDevicePrimaryCtxRetain, 7000)       \
  X(cuCtxGetCurrent, 4000)                \
  X(cuCtxSetCurrent, 4000)                \
  X(cuCtxGetDevice, 2000)                 \
  X(cuPointerGetAttributes, 7000)         \
  X(cuMemAlloc, 3020)                     \
  X(cuMemFree, 3020)                      \
  X(cuMemHostAlloc, 2020)                 \
  X(cuMemFreeHost, 2000)                  \
  X(cuMemGetAddressRange, 3020)           \
  X(cuMemGetAllocationGranularity, 10020) \
  X(cuMemCreate, 10020)                   \
  X(cuMemRelease, 10020)                  \
  X(cuMemRetainAllocationHandle, 11000)   \
  X(cuMemAddressReserve, 10020)           \
  X(cuMemAddressFree, 10020)              \
  X(cuMemMap, 10020)                      \
  X(cuMemUnmap, 10020)                    \
  X(cuMemSetAccess, 10020)                \
  X(cuMemcpyAsync, 4000)                  \
  X(cuStreamCreate, 2000)                 \
  X(cuStreamDestroy, 4000)                \
  X(cuStreamQuery, 2000)                  \
  X(cuStreamGetCtx, 9020)                 \
  X(cuStreamWaitEvent, 3020)              \
  X(cuEventCreate, 2000)                  \
  X(cuEventDestroy, 4000)                 \
  X(cuEventRecord, 2000)                  \
  X(cuEventQuery, 2000)                   \
  X(cuModuleLoadData, 2000)               \
  X(cuModuleGetFunction, 2000)            \
  X(cuLaunchKernel, 4000)

// The loaded driver: a table of its entry points, and what it failed with in words. The member
// names are the API's own (cuda.h's macros rename some, consistently, wherever this is seen).
struct Driver {
#define LOOM_CUDA_DRIVER_POINTER(name, version) PFN_##name##_v##version name = nullptr;
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CUDA_DRIVER_POINTER)
#undef LOOM_CUDA_DRIVER_POINTER

  std::string libraryPath;  // where libcuda.so.1 was found, for messages
  int driverVersion = 0;    // cuDriverGetVersion: 12040 is CUDA 12.4

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (cuGetErrorName, cuGetErrorString).
  std::string describe(CUresult result) const;
  // Throws loom::Error(loomUnhandledCudaError, "<call>: <name>: <text> (<doing>)").
  [[noreturn]] void fail(const char* call, CUresult result, const std::string& doing) const;

  // Checks a call's result. `doing` says what was being done, as text or as a function that
  // returns it (built only on failure, so the success path formats nothing).
  void check(CUresult result, const char* call, const char* doing) const {
    if (result != CUDA_SUCCESS) fail(call, result, doing);
  }
  template <typename Doing>
  void check(CUresult result, const char* call, Doing&& doing) const {
    if (result != CUDA_SUCCESS) fail(call, result, std::forward<Doing>(doing)());
  }
};

// The process's driver, opened and initialised (cuInit) at the first call. Null, with *why
// saying which of these it is, when there is none to use: libcuda.so.1 not found, the toolkit's
// stub library (CUDA_ERROR_STUB_LIBRARY), no CUDA device (CUDA_ERROR_NO_DEVICE), a driver
// without an entry point Loom calls, or any other cuInit failure. Thread-safe; the answer is
// the same for the whole process.
const Driver* loadDriver(std::string* why);

// "CUDA 12.4" for a cuDriverGetVersion value.
std::string cudaVersionText(int version);

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
