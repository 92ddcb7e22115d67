// SPDX-License-Identifier: Apache-2.0
// The kernels of cuda_kernels.cu inside a CUDA context. A CUmodule belongs to the context that
// loaded it, so each context (each device's primary context, or one the application made
// current) loads the embedded fatbin (cuda_fatbin.h) with cuModuleLoadData the first time a
// kernel is launched in it, and fetches every kernel's CUfunction then: a launch afterwards is
// a table read under a short lock, and a fatbin that does not load on this GPU fails the first
// launch with the reason, not a later one halfway through a call.
//
// Modules are never unloaded: they live as long as the contexts Loom keeps (primary contexts
// are retained for the process), and unloading at exit would race the driver's own teardown.
#pragma once

#include "device/cuda_driver.h"

#if LOOM_CUDA_DRIVER

#include <memory>
#include <mutex>
#include <unordered_map>

#include "kernels/device_kernels.h"
#include "loom.h"

namespace loom::device::cuda {

class KernelModules {
 public:
  explicit KernelModules(const Driver& driver);
  ~KernelModules();
  KernelModules(const KernelModules&) = delete;
  KernelModules& operator=(const KernelModules&) = delete;

  // The kernel of (kind, type, op) in `context`, which must be the calling thread's current
  // context (cuModuleLoadData loads into the current one); `device` names it in messages. `op`
  // matters for Reduce only (avg is sum's kernel). The caller has validated type and op
  // (kernelOpIndex). Throws loomUnhandledCudaError when the module does not load.
  CUfunction find(CUcontext context, int device, kernels::device::KernelKind kind,
                  loomDataType_t type, loomRedOp_t op);

 private:
  struct Table;  // one context's functions

  const Driver& driver_;
  std::mutex mutex_;
  std::unordered_map<CUcontext, std::unique_ptr<Table>> tables_;
};

// The reduce kernel slot of an op (sum, prod, max, min; avg reduces as sum), or -1 for an op
// that has no kernel (a PreMulSum op handle, an unknown value).
int kernelOpIndex(loomRedOp_t op);

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
