// SPDX-License-Identifier: Apache-2.0
// The one place where torch versions differ for loom_torch. Everything else is written once.
//
// torch 1.13 (Debian's python3-torch, built and tested here): a backend subclasses
// c10d::ProcessGroup. torch 2.x (2.1 and later; pip's 2.11 on the GPU machine): it subclasses
// c10d::Backend, which torch wraps in a ProcessGroup. The constructor (rank, size), every
// collective's signature, c10d::Work, OpType and the future are the same in both. So is
// getBackendName() const. The differences are the base class and the field that holds
// PREMUL_SUM's tensor factor. Both were read from PyTorch's c10d headers (Backend.hpp, Types.hpp,
// 2.1 to 2.11); the 2.x build is untested until a machine with torch 2.x builds it.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>

#include <optional>
#include <type_traits>
#include <utility>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define LOOM_TORCH_BACKEND_API 1
#elif TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR >= 13
#define LOOM_TORCH_BACKEND_API 0
#else
#error "loom_torch needs torch 1.13 or 2.1+"
#endif

namespace loom_torch {

#if LOOM_TORCH_BACKEND_API
using BackendBase = c10d::Backend;  // wrapped by torch's ProcessGroup
#else
using BackendBase = c10d::ProcessGroup;
#endif

// endCoalescing, which ends torch's coalescing window (batch_isend_irecv on 1.13): 1.13 has
// `void endCoalescing(std::vector<intrusive_ptr<Work>>& reqs)`, 2.x `intrusive_ptr<Work>
// endCoalescing()`. ProcessGroupLoom implements finishCoalescing(), which returns the
// window's work; this declares the override that torch calls.
#if LOOM_TORCH_BACKEND_API
#define LOOM_TORCH_END_COALESCING \
  c10::intrusive_ptr<c10d::Work> endCoalescing() override { return finishCoalescing(); }
#else
#define LOOM_TORCH_END_COALESCING \
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) override { finishCoalescing(); }
#endif

// PREMUL_SUM's factor when it is a tensor: 1.13 holds `std::vector<at::Tensor> tensor_factors`,
// 2.x `at::Tensor tensor_factor`. Detected by member rather than version number, since the
// release that changed it is not pinned down. nullopt: the factor is `double_factor`.
template <typename Supplement, typename = void>
struct HasTensorFactor : std::false_type {};
template <typename Supplement>
struct HasTensorFactor<Supplement, std::void_t<decltype(std::declval<const Supplement&>().tensor_factor)>>
    : std::true_type {};

template <typename Supplement>
std::optional<at::Tensor> premulTensorFactor(const Supplement& supplement, const char* operation) {
  if constexpr (HasTensorFactor<Supplement>::value) {
    if (supplement.tensor_factor.defined()) return supplement.tensor_factor;
  } else {
    if (!supplement.tensor_factors.empty()) {
      TORCH_CHECK(supplement.tensor_factors.size() == 1, "loom: ", operation,
                  ": PREMUL_SUM takes one factor tensor, got ", supplement.tensor_factors.size());
      return supplement.tensor_factors.front();
    }
  }
  return std::nullopt;
}

}  // namespace loom_torch
