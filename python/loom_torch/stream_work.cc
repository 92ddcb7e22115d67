// SPDX-License-Identifier: Apache-2.0
#include "stream_work.h"

#include <exception>
#include <stdexcept>

#include "completer.h"
#include "tensor_args.h"
#include "user_errors.h"

namespace loom_torch {
namespace {

// A future gets the work's outcome: the outputs, or the failure.
void completeFuture(c10::ivalue::Future& future, const std::exception_ptr& failure,
                    const std::vector<at::Tensor>& outputs) {
  if (failure) {
    future.setError(failure);
  } else {
    future.markCompleted(c10::IValue(outputs));
  }
}

}  // namespace

StreamWork::StreamWork(c10d::OpType type, const char* operation, loomComm_t comm, Completer* completer,
                       std::vector<at::Tensor> outputs)
    : c10d::Work(-1, type),
      operation_(operation),
      comm_(comm),
      completer_(completer),
      outputs_(std::move(outputs)) {}

StreamWork::~StreamWork() = default;

void StreamWork::keep(std::unique_ptr<ReduceOpFor> op) { ops_.push_back(std::move(op)); }

void StreamWork::launch(const c10::intrusive_ptr<StreamWork>& work, loomStream_t stream) {
  // The stream's reference: taken back by complete(), whenever the stream reaches it.
  StreamWork* raw = c10::intrusive_ptr<StreamWork>(work).release();
  const loomResult_t result = loomLaunchHostFunc(stream, &StreamWork::complete, raw);
  if (result == loomSuccess) return;
  const std::string message = inUserTerms(loomGetLastError(nullptr));
  complete(raw);  // nothing will run it: settle the work (it reports the calls' state)
  TORCH_CHECK(false, "loom: ", work->operation_, ": could not enqueue its completion: ", message);
}

void StreamWork::complete(void* work) {
  c10::intrusive_ptr<StreamWork>::reclaim(static_cast<StreamWork*>(work))->complete();
}

void StreamWork::complete() {
  std::exception_ptr failure;
  loomResult_t state = loomSuccess;
  if (loomCommGetAsyncError(comm_, &state) != loomSuccess || state != loomSuccess) {
    failure = std::make_exception_ptr(
        std::runtime_error("loom: " + operation_ + " failed: " + inUserTerms(loomGetLastError(comm_))));
  }
  if (!failure) {
    try {
      for (const std::function<void()>& step : steps_) step();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  settle(failure);
}

void StreamWork::abandon(const std::string& message) { settle(std::make_exception_ptr(std::runtime_error(message))); }

void StreamWork::settle(std::exception_ptr failure) {
  // What the calls read can go now; a PreMulSum operator is destroyed after its last call ran.
  steps_.clear();
  kept_.clear();
  ops_.clear();
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    const std::lock_guard<std::mutex> lock(futureMutex_);
    settled_ = true;
    failure_ = failure;
    future = future_;
  }
  finish(failure);  // wakes wait()
  if (!future) return;  // getFuture() will hand out a completed one
  // The future's callbacks are user code and may wait for later work on this stream.
  completer_->post([future, failure, outputs = outputs_] { completeFuture(*future, failure, outputs); });
}

c10::intrusive_ptr<c10::ivalue::Future> StreamWork::getFuture() {
  const std::lock_guard<std::mutex> lock(futureMutex_);
  if (future_) return future_;
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  if (settled_) completeFuture(*future_, failure_, outputs_);
  return future_;
}

}  // namespace loom_torch
