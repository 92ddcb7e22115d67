// broadcast_perf: nccl-tests' broadcast benchmark on Loom. In place: sendbuff == recvbuff.
#include "perf/perf_common.h"

namespace loom::perf {
namespace {

void* sendBuffer(const CallContext& call) { return call.inPlace ? call.recvBase : call.sendBase; }

void prepare(const CallContext& call, const Pattern& pattern) {
  // Non-roots fill their (unread) send buffer with their own data, which differs from the
  // root's, and start with a poisoned output, so any data not from the root is caught.
  fillInput(call.sendBase, call.count, pattern, call.rank, 0);
  poison(call.recvBase, call.bytes(call.count));
  if (call.inPlace && call.rank == call.root)
    fillInput(call.recvBase, call.count, pattern, call.rank, 0);
}

loomResult_t run(const CallContext& call) {
  return loomBroadcast(sendBuffer(call), call.recvBase, call.count, call.type, call.root, call.comm,
                       nullptr);
}

size_t countWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongCopied(call.recvBase, call.count, pattern, call.root, 0);
}

double busFactor(int) { return 1.0; }

constexpr Collective kBroadcast{"broadcast", false,   true, false,
                                busFactor,   prepare, run,  countWrong};

}  // namespace
}  // namespace loom::perf

int main(int argc, char** argv) { return loom::perf::perfMain(argc, argv, loom::perf::kBroadcast); }
