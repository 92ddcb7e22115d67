// reduce_perf: nccl-tests' reduce benchmark on Loom. In place: sendbuff == recvbuff. Only the
// root's output is defined, so only the root checks.
#include "perf/perf_common.h"

namespace loom::perf {
namespace {

void* sendBuffer(const CallContext& call) { return call.inPlace ? call.recvBase : call.sendBase; }

void prepare(const CallContext& call, const Pattern& pattern) {
  fillInput(sendBuffer(call), call.count, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

loomResult_t run(const CallContext& call) {
  return loomReduce(sendBuffer(call), call.recvBase, call.count, call.type, call.op, call.root,
                    call.comm, nullptr);
}

size_t countWrong(const CallContext& call, const Pattern& pattern) {
  return call.rank == call.root ? countWrongReduced(call.recvBase, call.count, pattern, 0) : 0;
}

double busFactor(int) { return 1.0; }

constexpr Collective kReduce{"reduce", true, true, false, busFactor, prepare, run, countWrong};

}  // namespace
}  // namespace loom::perf

int main(int argc, char** argv) { return loom::perf::perfMain(argc, argv, loom::perf::kReduce); }
