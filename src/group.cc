#include "group.h"

#include <exception>
#include <map>
#include <thread>
#include <vector>

#include "comm.h"
#include "error.h"
#include "stream.h"

namespace loom::group {

namespace {

struct Queued {
  loomComm_t comm;
  loomStream_t stream;
  std::function<void()> work;
};

thread_local int depth = 0;
thread_local std::vector<Queued> queued;

}  // namespace

bool active() { return depth > 0; }

void start() { ++depth; }

void enqueue(loomComm_t comm, loomStream_t stream, std::function<void()> work) {
  queued.push_back(Queued{comm, stream, std::move(work)});
}

void enqueueOnStream(loomComm_t comm, loomStream_t stream, std::function<void()> work) {
  Communicator* impl = comm->impl.get();
  stream->impl.enqueue([impl, work = std::move(work)] {
    try {
      work();
    } catch (const Error& error) {
      impl->recordAsyncError(error.code(), error.what());
      throw;
    }
  });
}

void end() {
  if (depth == 0) throwUsage("loomGroupEnd without a matching loomGroupStart");
  if (--depth > 0) return;
  std::vector<Queued> calls = std::move(queued);
  queued.clear();

  // Stream work is just handed to the streams; the rest is grouped per communicator.
  std::map<loomComm_t, std::vector<std::function<void()>*>> perComm;
  for (Queued& call : calls) {
    if (call.stream != nullptr) {
      enqueueOnStream(call.comm, call.stream, std::move(call.work));
    } else {
      perComm[call.comm].push_back(&call.work);
    }
  }
  auto runAll = [](const std::vector<std::function<void()>*>& works) {
    for (auto* work : works) (*work)();
  };
  if (perComm.size() <= 1) {
    for (auto& [comm, works] : perComm) runAll(works);
    return;
  }
  std::vector<std::exception_ptr> errors(perComm.size());
  std::vector<std::thread> threads;
  size_t index = 0;
  for (auto& [comm, works] : perComm) {
    threads.emplace_back([&, slot = index++, works = &works] {
      try {
        runAll(*works);
      } catch (...) {
        errors[slot] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace loom::group
