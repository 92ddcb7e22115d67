// SPDX-License-Identifier: Apache-2.0
#include "device/cuda_kernel_module.h"

#if LOOM_CUDA_DRIVER

#include <string>

#include "base/error.h"
#include "device/cuda_fatbin.h"
#include "device/cuda_kernel_names.h"

namespace loom::device::cuda {

using kernels::device::KernelKind;

namespace {
constexpr int kReduceOps = 4;  // sum, prod, max, min: loomRedOp_t's first four values
}  // namespace

struct KernelModules::Table {
  CUfunction reduce[loomNumTypes][kReduceOps] = {};
  CUfunction average[loomNumTypes] = {};
  CUfunction finishAverage[loomNumTypes] = {};
  CUfunction premultiply[loomNumTypes] = {};
};

KernelModules::KernelModules(const Driver& driver) : driver_(driver) {}
KernelModules::~KernelModules() = default;

int kernelOpIndex(loomRedOp_t op) {
  switch (op) {
    case loomSum:
    case loomAvg:
      return loomSum;
    case loomProd:
    case loomMax:
    case loomMin:
      return op;
    default:
      return -1;
  }
}

CUfunction KernelModules::find(CUcontext context, int device, KernelKind kind, loomDataType_t type,
                               loomRedOp_t op) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Table>& table = tables_[context];
  if (table == nullptr) {
#if !LOOM_HAVE_CUDA
    (void)device;  // unreachable: cudaRuntime() refuses a build without kernels
    throw Error(loomUnhandledCudaError, "this Loom was built without CUDA kernels (no nvcc)");
#else
    auto loaded = std::make_unique<Table>();
    CUmodule module = nullptr;
    driver_.check(driver_.cuModuleLoadData(&module, kFatbin), "cuModuleLoadData", [&] {
      return "loading Loom's kernels (a fatbin of " + std::to_string(kFatbinBytes) +
             " bytes with code for sm_80, sm_90 and sm_100 and PTX for compute_100, built with " +
             cudaVersionText(CUDA_VERSION) + ") into device " + std::to_string(device) +
             "'s context; the driver " + driver_.libraryPath + " supports " +
             cudaVersionText(driver_.driverVersion);
    });
    const auto get = [&](CUfunction* function, const char* name) {
      driver_.check(driver_.cuModuleGetFunction(function, module, name), "cuModuleGetFunction",
                    [&] { return std::string("finding kernel ") + name + " in Loom's fatbin"; });
    };
#define LOOM_CUDA_GET_REDUCE(loomType, typeName, T, loomOp, opName, Op) \
  get(&loaded->reduce[loomType][loomOp], "loom_reduce_" #typeName "_" #opName);
#define LOOM_CUDA_GET_TYPE(loomType, typeName, T)                          \
  LOOM_CUDA_KERNEL_OPS(LOOM_CUDA_GET_REDUCE, loomType, typeName, T)        \
  get(&loaded->average[loomType], "loom_average_" #typeName);              \
  get(&loaded->finishAverage[loomType], "loom_finish_average_" #typeName); \
  get(&loaded->premultiply[loomType], "loom_premultiply_" #typeName);
    LOOM_CUDA_KERNEL_TYPES(LOOM_CUDA_GET_TYPE)
#undef LOOM_CUDA_GET_TYPE
#undef LOOM_CUDA_GET_REDUCE
    table = std::move(loaded);
#endif
  }
  switch (kind) {
    case KernelKind::Reduce:
      return table->reduce[type][kernelOpIndex(op)];
    case KernelKind::Average:
      return table->average[type];
    case KernelKind::FinishAverage:
      return table->finishAverage[type];
    case KernelKind::Premultiply:
      return table->premultiply[type];
  }
  throwInternal("unknown kernel kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace loom::device::cuda

#endif  // LOOM_CUDA_DRIVER
