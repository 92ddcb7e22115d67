#include "core/group.h"

#include <map>
#include <vector>

#include "base/error.h"
#include "core/call_batch.h"
#include "core/comm.h"
#include "core/stream.h"

namespace loom::group {

namespace {

struct Queued {
  algo::CallSpec call;
  std::shared_ptr<Communicator> comm;
};

struct GroupState {
  int depth = 0;
  std::vector<Queued> queued;
  loomResult_t failure = loomSuccess;
  std::string failureMessage;
};
thread_local GroupState state;

}  // namespace

bool active() { return state.depth > 0; }

void start() { ++state.depth; }

void noteFailure(loomResult_t code, const std::string& message) {
  if (state.failure == loomSuccess) {
    state.failure = code;
    state.failureMessage = message;
  }
}

void issue(const algo::CallSpec& call, std::shared_ptr<Communicator> comm) {
  if (active()) {
    state.queued.push_back(Queued{call, std::move(comm)});
    return;
  }
  const uint64_t ticket = comm->takeTicket();
  if (call.stream == nullptr) {
    comm->run(call, ticket);
    return;
  }
  call.stream->impl.enqueue({CallBatch{std::move(comm), {{call, ticket}}}});
}

void end() {
  if (state.depth == 0) throwUsage("loomGroupEnd without a matching loomGroupStart");
  if (--state.depth > 0) return;
  std::vector<Queued> calls = std::move(state.queued);
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
  std::map<loomStream_t, std::map<Communicator*, CallBatch>> perStream;
  for (Queued& queued : calls) {
    CallBatch& batch = perStream[queued.call.stream][queued.comm.get()];
    batch.comm = queued.comm;
    batch.calls.emplace_back(queued.call, queued.comm->takeTicket());
  }
  auto batchesOf = [](std::map<Communicator*, CallBatch>& byComm) {
    std::vector<CallBatch> batches;
    for (auto& [key, batch] : byComm) batches.push_back(std::move(batch));
    return batches;
  };
  for (auto& [stream, byComm] : perStream) {
    if (stream != nullptr) stream->impl.enqueue(batchesOf(byComm));
  }
  if (auto it = perStream.find(nullptr); it != perStream.end()) runBatches(batchesOf(it->second));
}

}  // namespace loom::group
