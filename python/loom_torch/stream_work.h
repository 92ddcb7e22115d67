// SPDX-License-Identifier: Apache-2.0
// StreamWork: the c10d work object of one operation issued on a process group's Loom stream.
//
// The operation's Loom calls are enqueued on the stream and return at once; right after them
// the process group enqueues this work's completion as a host function (loomLaunchHostFunc),
// so it runs on the stream's thread exactly when the calls have run. Completion then runs the
// operation's own last steps (copying results into non-contiguous or listed output tensors),
// releases what the calls read (inputs, staging tensors, a PreMulSum operator) and marks the
// work done, which wakes wait(). The future, whose callbacks are user code, is completed with
// the outputs on the group's Completer (completer.h), never on the stream's thread. If a call
// failed, the communicator's error is the work's exception and the future's error, with Loom's
// message (rank, peer, operation).
//
// c10d::Work's own wait(timeout), isCompleted, isSuccess and exception serve the state; this
// class adds result(), getFuture() and the completion.
#pragma once

#include <ATen/core/ivalue.h>
#include <loom.h>

#include <functional>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "torch_compat.h"

namespace loom_torch {

class Completer;
class ReduceOpFor;

class StreamWork final : public c10d::Work {
 public:
  // `completer` completes the future; it outlives the work's completion (the process group
  // drains its stream before it goes).
  StreamWork(c10d::OpType type, const char* operation, loomComm_t comm, Completer* completer,
             std::vector<at::Tensor> outputs);
  ~StreamWork() override;

  // Keeps `tensor` alive until the calls have run (an input or a staging buffer they use).
  void keep(at::Tensor tensor) { kept_.push_back(std::move(tensor)); }
  // Keeps a PreMulSum operator until the calls have run; completion destroys it.
  void keep(std::unique_ptr<ReduceOpFor> op);
  // A last step of the operation, run at completion before the future completes.
  void then(std::function<void()> step) { steps_.push_back(std::move(step)); }

  // Enqueues the completion on `stream`, after the calls just issued there. On failure
  // (a destroyed stream) the work is completed with the error, which is also thrown.
  static void launch(const c10::intrusive_ptr<StreamWork>& work, loomStream_t stream);

  // Completes the work with `message` as its error: its calls will never run.
  void abandon(const std::string& message);

  std::vector<at::Tensor> result() override { return outputs_; }
  // Made on first use: an operation nobody asks the future of (a plain dist.all_reduce, which
  // only waits) completes without a trip through the Completer. Asked after completion, it
  // is returned completed.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  static void complete(void* work);  // the host function; owns one reference to the work
  void complete();
  void settle(std::exception_ptr failure);  // the work's end: releases, finishes, completes the future

  const std::string operation_;
  loomComm_t comm_;
  Completer* completer_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> kept_;
  std::vector<std::unique_ptr<ReduceOpFor>> ops_;
  std::vector<std::function<void()>> steps_;
  std::mutex futureMutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // null until getFuture()
  bool settled_ = false;                            // under futureMutex_
  std::exception_ptr failure_;                      // the outcome, once settled_
};

}  // namespace loom_torch
