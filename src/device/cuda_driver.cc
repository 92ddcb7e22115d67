// SPDX-License-Identifier: Apache-2.0
#include "device/cuda_driver.h"

#if LOOM_CUDA_DRIVER

#include <dlfcn.h>

#include <memory>
#include <string>

#include "base/error.h"

namespace loom::device::cuda {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";

// The dlopen handle is never closed and the table never freed: contexts, modules and the memory
// Loom hands out live for the process, threads may still call the driver while it exits, and
// unloading the driver under them (or racing its own exit handlers) would turn a clean exit into
// a crash. So the result of loading is made once and deliberately outlives static destruction.
struct Loaded {
  std::unique_ptr<Driver> driver;
  std::string why;  // when driver is null
};

std::string dlerrorText() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

// The path the dynamic loader picked, for messages: "the toolkit's stub" is only useful with it.
std::string pathOf(void* symbol) {
  Dl_info info{};
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr)
    return info.dli_fname;
  return kLibrary;
}

// cuGetProcAddress as CUDA 12.0 defines it (_v2), or as CUDA 11.3-11.8 did (no status).
class ProcAddress {
 public:
  explicit ProcAddress(void* library)
      : v2_(reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"))),
        v1_(v2_ != nullptr ? nullptr
                           : reinterpret_cast<PFN_cuGetProcAddress_v11030>(
                                 dlsym(library, "cuGetProcAddress"))) {}

  bool found() const { return v2_ != nullptr || v1_ != nullptr; }
  void* symbol() const {
    return v2_ != nullptr ? reinterpret_cast<void*>(v2_) : reinterpret_cast<void*>(v1_);
  }

  // The entry point `name` at kCudaAbiVersion's ABI; its result, and *function null when the
  // driver has none.
  CUresult resolve(const char* name, void** function) const {
    *function = nullptr;
    if (v2_ != nullptr) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      const CUresult result =
          v2_(name, function, kCudaAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status);
      if (result == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS) *function = nullptr;
      return result;
    }
    return v1_(name, function, kCudaAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT);
  }

 private:
  PFN_cuGetProcAddress_v12000 v2_;
  PFN_cuGetProcAddress_v11030 v1_;
};

Loaded fail(std::string why) { return Loaded{nullptr, std::move(why)}; }

std::string stubText(const std::string& path) {
  return "no CUDA driver: " + path +
         " is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver; the stub is for "
         "linking only (a real libcuda.so.1 comes with the NVIDIA driver)";
}

Loaded load() {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, where they could capture
  // another library's lookups. RTLD_NOW: a broken driver fails here, not in the middle of a call.
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return fail(std::string("no CUDA driver: ") + kLibrary + " not found (" + dlerrorText() + ")");
  }
  const ProcAddress procAddress(library);
  if (!procAddress.found()) {
    return fail(std::string("no CUDA driver: ") + pathOf(nullptr) +
                " has no cuGetProcAddress (a driver older than CUDA 11.3)");
  }
  const std::string path = pathOf(procAddress.symbol());

  auto driver = std::make_unique<Driver>();
  driver->libraryPath = path;
  // A missing entry point is a driver too old for Loom: it is refused here, whole, so that no
  // call can meet a null pointer later.
#define LOOM_CUDA_DRIVER_RESOLVE(name, version)                                                \
  {                                                                                            \
    void* function = nullptr;                                                                  \
    const CUresult result = procAddress.resolve(#name, &function);                             \
    if (result == CUDA_ERROR_STUB_LIBRARY) return fail(stubText(path));                        \
    if (result != CUDA_SUCCESS || function == nullptr) {                                       \
      return fail("no CUDA driver: " + path + " has no " #name " of CUDA 12.0's ABI (error " + \
                  std::to_string(static_cast<int>(result)) + "): the driver is too old");      \
    }                                                                                          \
    driver->name = reinterpret_cast<PFN_##name##_v##version>(function);                        \
  }
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CUDA_DRIVER_RESOLVE)
#undef LOOM_CUDA_DRIVER_RESOLVE

  const CUresult init = driver->cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY) return fail(stubText(path));
  if (init == CUDA_ERROR_NO_DEVICE) {
    return fail("no CUDA device: cuInit: " + driver->describe(init) + " (driver " + path + ")");
  }
  if (init != CUDA_SUCCESS) {
    return fail("the CUDA driver failed to initialise: cuInit: " + driver->describe(init) +
                " (driver " + path + ")");
  }
  driver->check(driver->cuDriverGetVersion(&driver->driverVersion), "cuDriverGetVersion",
                "asking the driver's CUDA version");
  return Loaded{std::move(driver), {}};
}

}  // namespace

std::string Driver::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return "CUresult " + std::to_string(static_cast<int>(result)) + ": unrecognized error code";
  }
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    text = "no description";
  }
  return std::string(name) + ": " + text;
}

void Driver::fail(const char* call, CUresult result, const std::string& doing) const {
  throw Error(loomUnhandledCudaError,
              std::string(call) + ": " + describe(result) + " (" + doing + ")");
}

const Driver* loadDriver(std::string* why) {
  static const Loaded* const loaded = new Loaded([] {
    try {
      return load();
    } catch (const Error& error) {  // cuDriverGetVersion failing after a good cuInit
      return fail(std::string("the CUDA driver failed: ") + error.what());
    }
  }());
  if (loaded->driver == nullptr && why != nullptr) *why = loaded->why;
  return loaded->driver.get();
}

std::string cudaVersionText(int version) {
  return "CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
