// SPDX-License-Identifier: Apache-2.0
// ProcessGroupLoom: torch.distributed's backend "loom" on CPU tensors, a thin layer over Loom's C
// API (include/loom.h), as ProcessGroupGloo is over Gloo. One Loom communicator per process
// group, made through the c10d store torch passes in (loomCommInitRankStore), and one Loom
// stream.
//
// An operation checks its arguments (a bad one raises at once and nothing is issued), issues
// its Loom calls on the group's stream and returns a StreamWork (stream_work.h) that completes
// when the stream has run them: many operations can be in flight, and they run in the order
// they were issued. Errors of the calls themselves (a dead peer, ranks that disagree) are the
// work's exception, raised by wait(), with Loom's message (rank, peer, operation, size).
// The base is c10d::ProcessGroup on torch 1.13 and c10d::Backend on 2.x (torch_compat.h).
#pragma once

#include <loom.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "torch_compat.h"

namespace loom_torch {

class Completer;
class StreamWork;

class ProcessGroupLoom final : public BackendBase {
 public:
  ProcessGroupLoom(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupLoom() override;

  const std::string getBackendName() const override { return "loom"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // torch's coalescing window (batch_isend_irecv): the operations issued between start and end
  // on this thread form one Loom group, so every rank may post all its receives and sends in
  // any order without deadlock. Their work objects complete when the group has run.
  void startCoalescing() override;
  LOOM_TORCH_END_COALESCING
  c10::intrusive_ptr<c10d::Work> finishCoalescing();

 private:
  // Throws a RuntimeError carrying Loom's message unless `result` is loomSuccess.
  void check(loomResult_t result, const char* operation) const;
  // The work object of an operation whose calls are being issued on stream_.
  c10::intrusive_ptr<StreamWork> work(c10d::OpType type, const char* operation, std::vector<at::Tensor> outputs) const;
  // Enqueues its completion after the calls just issued (inside a coalescing window: after
  // the window's group); returns it.
  c10::intrusive_ptr<c10d::Work> launch(const c10::intrusive_ptr<StreamWork>& work);

  loomComm_t comm_ = nullptr;
  loomStream_t stream_ = nullptr;
  std::unique_ptr<Completer> completer_;  // completes the futures (completer.h)
  // Held from an operation's first call to its completion's enqueue: two Python threads on one
  // group would otherwise interleave calls, and Loom refuses concurrent issue on a communicator.
  std::mutex issueMutex_;
  bool coalescing_ = false;  // a coalescing window is open on coalescingThread_
  std::thread::id coalescingThread_;
  std::vector<c10::intrusive_ptr<StreamWork>> coalesced_;  // its operations' work, launched at its end
};

}  // namespace loom_torch
