#include "core/group.h"

#include <exception>
#include <map>
#include <thread>

#include "base/error.h"
#include "core/stream.h"

namespace loom::group {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<PendingCall> queued;
  loomResult_t failure = loomSuccess;
  std::string failureMessage;
};
thread_local GroupState state;

// Work on a stream counts as pending on its communicator until it has run.
void enqueueOnStream(loomStream_t stream, std::vector<std::shared_ptr<Communicator>> comms,
                     std::function<void()> work) {
  for (auto& comm : comms) comm->asyncWorkAdded();
  // Failures are recorded by the communicator itself (sticky async error). The work counts as
  // pending until the stream is idle again, so loomCommFinalize implies an idle stream.
  stream->impl.enqueue(std::move(work), [comms = std::move(comms)] {
    for (auto& comm : comms) comm->asyncWorkDone();
  });
}

}  // namespace

bool active() { return state.depth > 0; }

void start() { ++state.depth; }

void noteFailure(loomResult_t code, const std::string& message) {
  if (state.failure == loomSuccess) {
    state.failure = code;
    state.failureMessage = message;
  }
}

void issue(PendingCall call) {
  if (active()) {
    state.queued.push_back(std::move(call));
    return;
  }
  const uint64_t ticket = call.comm->takeTicket();
  if (call.stream == nullptr) {
    call.comm->run(call.call, ticket);
    return;
  }
  auto comm = call.comm;
  enqueueOnStream(call.stream, {comm}, [comm, collective = call.call, ticket] { comm->run(collective, ticket); });
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

void end() {
  if (state.depth == 0) throwUsage("loomGroupEnd without a matching loomGroupStart");
  if (--state.depth > 0) return;
  std::vector<PendingCall> calls = std::move(state.queued);
  state.queued.clear();
  const loomResult_t failure = state.failure;
  const std::string failureMessage = std::move(state.failureMessage);
  state.failure = loomSuccess;
  state.failureMessage.clear();
  if (failure != loomSuccess) {
    throw Error(failure, "a call in the group failed, so none of its " + std::to_string(calls.size()) +
                             " queued calls ran: " + failureMessage);
  }

  // Tickets in issue order, then per stream (NULL included) one batch per communicator.
  struct Batch {
    std::shared_ptr<Communicator> comm;
    std::vector<std::pair<CollectiveCall, uint64_t>> calls;
  };
  std::map<loomStream_t, std::map<Communicator*, Batch>> perStream;
  for (PendingCall& pending : calls) {
    Batch& batch = perStream[pending.stream][pending.comm.get()];
    batch.comm = pending.comm;
    batch.calls.emplace_back(pending.call, pending.comm->takeTicket());
  }
  auto tasksOf = [](const std::map<Communicator*, Batch>& batches) {
    std::vector<std::function<void()>> tasks;
    for (const auto& [key, batch] : batches) {
      tasks.push_back([batch] {
        // Every ticket must be run: after a failure the rest fail at once (the error is
        // sticky) instead of leaving later calls waiting for their turn.
        std::exception_ptr first;
        for (const auto& [call, ticket] : batch.calls) {
          try {
            batch.comm->run(call, ticket);
          } catch (...) {
            if (!first) first = std::current_exception();
          }
        }
        if (first) std::rethrow_exception(first);
      });
    }
    return tasks;
  };
  for (auto& [stream, batches] : perStream) {
    if (stream != nullptr) {
      std::vector<std::shared_ptr<Communicator>> comms;
      for (const auto& [key, batch] : batches) comms.push_back(batch.comm);
      enqueueOnStream(stream, std::move(comms), [tasks = tasksOf(batches)] { runConcurrently(tasks); });
    }
  }
  if (auto it = perStream.find(nullptr); it != perStream.end()) runConcurrently(tasksOf(it->second));
}

}  // namespace loom::group
