// SPDX-License-Identifier: Apache-2.0
// What ProcessGroupLoom checks and converts before a Loom call: tensors (CPU, one per call,
// dtype Loom knows, same shape where it must match) and torch's ReduceOp as a loomRedOp_t.
// Every refusal is a RuntimeError (TORCH_CHECK) that names the operation and the argument.
#pragma once

#include <loom.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>
#include <vector>

namespace loom_torch {

// The Loom datatype of `tensor` (bool travels as uint8).
loomDataType_t loomType(const at::Tensor& tensor, const char* operation);

// A CPU tensor, or a clear error: CUDA tensors wait for Loom's device path.
void requireCpu(const at::Tensor& tensor, const char* operation, const char* argument);

// The one tensor of a CPU call's list.
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* operation, const char* argument);

// `tensor` has `like`'s dtype and number of elements.
void requireLike(const at::Tensor& tensor, const at::Tensor& like, const char* operation, const std::string& argument);

// A list of `count` tensors, each like `like`.
void requireList(const std::vector<at::Tensor>& list, size_t count, const at::Tensor& like, const char* operation,
                 const char* argument);

// A tensor Loom may write: the tensor itself when contiguous, else a contiguous copy that
// finish() writes back. Holds its own handles (the caller's list is gone when the work
// completes), so it can be copied into a completion step.
class Output {
 public:
  explicit Output(const at::Tensor& tensor)
      : tensor_(tensor), buffer_(tensor.is_contiguous() ? tensor : tensor.contiguous()) {}
  at::Tensor& buffer() { return buffer_; }
  const at::Tensor& buffer() const { return buffer_; }
  bool needsCopyBack() const { return !buffer_.is_same(tensor_); }
  void finish() const {
    if (needsCopyBack()) tensor_.copy_(buffer_);
  }

 private:
  at::Tensor tensor_;
  at::Tensor buffer_;
};

// torch's reduction as Loom's: SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM (a Loom PreMulSum
// operator made for the call and destroyed after it). A bool SUM is a logical or (MAX), a bool
// PRODUCT a logical and (MIN), as NCCL's backend does.
class ReduceOpFor {
 public:
  ReduceOpFor(const c10d::ReduceOp& op, const at::Tensor& tensor, loomComm_t comm, const char* operation);
  ~ReduceOpFor();
  ReduceOpFor(const ReduceOpFor&) = delete;
  ReduceOpFor& operator=(const ReduceOpFor&) = delete;
  loomRedOp_t op() const { return op_; }

 private:
  loomRedOp_t op_ = loomSum;
  loomComm_t premulComm_ = nullptr;  // set while a PreMulSum operator is live
  at::Tensor scalar_;                // its scalar, in the tensor's dtype
};

}  // namespace loom_torch
