// all_reduce_perf: nccl-tests' all-reduce benchmark on Loom. In place: sendbuff == recvbuff.
#include "perf/perf_common.h"

namespace loom::perf {
namespace {

void* buffer(const CallContext& call) { return call.inPlace ? call.recvBase : call.sendBase; }

void prepare(const CallContext& call, const Pattern& pattern) {
  fillInput(buffer(call), call.count, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

loomResult_t run(const CallContext& call) {
  return loomAllReduce(buffer(call), call.recvBase, call.count, call.type, call.op, call.comm,
                       nullptr);
}

size_t countWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongReduced(call.recvBase, call.count, pattern, 0);
}

// Each rank sends and receives 2(n-1)/n of the data in a ring all-reduce.
double busFactor(int n) { return 2.0 * (n - 1) / n; }

constexpr Collective kAllReduce{"all_reduce", true,    false, false,
                                busFactor,    prepare, run,   countWrong};

}  // namespace
}  // namespace loom::perf

int main(int argc, char** argv) { return loom::perf::perfMain(argc, argv, loom::perf::kAllReduce); }
