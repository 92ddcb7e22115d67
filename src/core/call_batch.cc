// SPDX-License-Identifier: Apache-2.0
#include "core/call_batch.h"

#include <exception>
#include <thread>

#include "core/comm.h"

namespace loom {

void runBatch(const CallBatch& batch) {
  std::exception_ptr first;
  for (const Work& work : batch.calls) {
    try {
      if (work.peerOps.empty()) {
        batch.comm->run(work.call, work.ticket);
      } else {
        batch.comm->runPeerOps(work.peerOps, work.ticket);
      }
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void runBatches(const std::vector<CallBatch>& batches) {
  if (batches.size() == 1) {
    runBatch(batches.front());
    return;
  }
  std::vector<std::function<void()>> tasks;
  for (const CallBatch& batch : batches) tasks.push_back([&batch] { runBatch(batch); });
  runConcurrently(tasks);
}

void runConcurrently(const std::vector<std::function<void()>>& tasks) {
  if (tasks.size() == 1) {
    tasks.front()();
    return;
  }
  std::vector<std::exception_ptr> errors(tasks.size());
  std::vector<std::thread> threads;
  auto joinAll = [&] {
    for (auto& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  };
  try {
    for (size_t i = 1; i < tasks.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          tasks[i]();
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
  } catch (...) {
    joinAll();  // a thread could not start: finish the ones that did, then report
    throw;
  }
  if (!tasks.empty()) {
    try {
      tasks[0]();
    } catch (...) {
      errors[0] = std::current_exception();
    }
  }
  joinAll();
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace loom
