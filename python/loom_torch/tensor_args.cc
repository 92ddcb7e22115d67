// SPDX-License-Identifier: Apache-2.0
#include "tensor_args.h"

#include "torch_compat.h"
#include "user_errors.h"

#include <ATen/ops/scalar_tensor.h>

#include <stdexcept>

namespace loom_torch {

loomDataType_t loomType(const at::Tensor& tensor, const char* operation) {
  switch (tensor.scalar_type()) {
    case at::kFloat: return loomFloat32;
    case at::kDouble: return loomFloat64;
    case at::kHalf: return loomFloat16;
    case at::kBFloat16: return loomBfloat16;
    case at::kChar: return loomInt8;
    case at::kByte: return loomUint8;
    case at::kBool: return loomUint8;
    case at::kInt: return loomInt32;
    case at::kLong: return loomInt64;
    default:
      TORCH_CHECK(false, "loom: ", operation, ": tensors of dtype ", tensor.scalar_type(),
                  " are not supported (float32/64, float16, bfloat16, int8, uint8, int32, int64, bool are)");
  }
}

void requireCpu(const at::Tensor& tensor, const char* operation, const char* argument) {
  TORCH_CHECK(tensor.device().is_cpu(), "loom: ", operation, ": ", argument, " is on ", tensor.device(),
              "; this release of the loom backend takes CPU tensors only (its CUDA path is not built yet)");
  TORCH_CHECK(tensor.layout() == at::kStrided, "loom: ", operation, ": ", argument, " has layout ", tensor.layout(),
              "; the loom backend takes dense (strided) tensors only");
}

at::Tensor& single(std::vector<at::Tensor>& tensors, const char* operation, const char* argument) {
  TORCH_CHECK(tensors.size() == 1, "loom: ", operation, ": ", argument, " must hold exactly one tensor (got ",
              tensors.size(), ")");
  requireCpu(tensors.front(), operation, argument);
  return tensors.front();
}

void requireLike(const at::Tensor& tensor, const at::Tensor& like, const char* operation, const std::string& argument) {
  requireCpu(tensor, operation, argument.c_str());
  TORCH_CHECK(tensor.scalar_type() == like.scalar_type(), "loom: ", operation, ": ", argument, " has dtype ",
              tensor.scalar_type(), ", the input ", like.scalar_type());
  TORCH_CHECK(tensor.numel() == like.numel(), "loom: ", operation, ": ", argument, " has ", tensor.numel(),
              " elements, the input ", like.numel());
}

void requireList(const std::vector<at::Tensor>& list, size_t count, const at::Tensor& like, const char* operation,
                 const char* argument) {
  TORCH_CHECK(list.size() == count, "loom: ", operation, ": ", argument, " must hold ", count,
              " tensors (one per rank), got ", list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    requireLike(list[i], like, operation, std::string(argument) + "[" + std::to_string(i) + "]");
  }
}

namespace {

loomRedOp_t plainOp(c10d::ReduceOp::RedOpType type, bool isBool, const char* operation) {
  switch (type) {
    case c10d::ReduceOp::SUM: return isBool ? loomMax : loomSum;
    case c10d::ReduceOp::PRODUCT: return isBool ? loomMin : loomProd;
    case c10d::ReduceOp::MIN: return loomMin;
    case c10d::ReduceOp::MAX: return loomMax;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!isBool, "loom: ", operation, ": AVG of bool tensors is undefined");
      return loomAvg;
    default:
      TORCH_CHECK(false, "loom: ", operation, ": ReduceOp ", static_cast<int>(type),
                  " (bitwise) is not supported: SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM are");
  }
}

}  // namespace

ReduceOpFor::ReduceOpFor(const c10d::ReduceOp& op, const at::Tensor& tensor, loomComm_t comm, const char* operation) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) {
    op_ = plainOp(op.op_, tensor.scalar_type() == at::kBool, operation);
    return;
  }
  const auto* supplement = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "loom: ", operation, ": PREMUL_SUM without its factor");
  TORCH_CHECK(tensor.is_floating_point(), "loom: ", operation, ": PREMUL_SUM needs a floating-point tensor");
  const std::optional<at::Tensor> factor = premulTensorFactor(*supplement, operation);
  if (!factor) {
    scalar_ = at::scalar_tensor(supplement->double_factor, tensor.options());
  } else {
    TORCH_CHECK(factor->numel() == 1, "loom: ", operation, ": PREMUL_SUM's factor tensor must hold one element, it holds ",
                factor->numel());
    scalar_ = factor->to(tensor.options()).contiguous();
  }
  loomRedOp_t made = loomSum;
  const loomResult_t result = loomRedOpCreatePreMulSum(&made, scalar_.data_ptr(), loomType(tensor, operation),
                                                       loomScalarHostImmediate, comm);
  TORCH_CHECK(result == loomSuccess, "loom: ", operation, ": ", inUserTerms(loomGetLastError(comm)));
  op_ = made;
  premulComm_ = comm;
}

ReduceOpFor::~ReduceOpFor() {
  if (premulComm_ != nullptr) loomRedOpDestroy(op_, premulComm_);
}

}  // namespace loom_torch
