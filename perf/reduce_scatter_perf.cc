// reduce_scatter_perf: nccl-tests' reduce-scatter benchmark on Loom. `count` is the per-rank
// result; rows show the reduced total (n * count), as nccl-tests does. In place:
// recvbuff == sendbuff + rank * count.
#include "perf/perf_common.h"

namespace loom::perf {
namespace {

void* recvBuffer(const CallContext& call) {
  return call.inPlace
             ? CallContext::offset(call.sendBase, call.rank * call.count, typeSize(call.type))
             : call.recvBase;
}

void prepare(const CallContext& call, const Pattern& pattern) {
  fillInput(call.sendBase, call.count * call.nranks, pattern, call.rank, 0);
  if (!call.inPlace) poison(call.recvBase, call.bytes(call.count));
}

loomResult_t run(const CallContext& call) {
  return loomReduceScatter(call.sendBase, recvBuffer(call), call.count, call.type, call.op,
                           call.comm, nullptr);
}

size_t countWrong(const CallContext& call, const Pattern& pattern) {
  return countWrongReduced(recvBuffer(call), call.count, pattern, call.rank * call.count);
}

// Each rank sends the n-1 blocks it does not keep.
double busFactor(int n) { return double(n - 1) / n; }

constexpr Collective kReduceScatter{"reduce_scatter", true,    false, true,
                                    busFactor,        prepare, run,   countWrong};

}  // namespace
}  // namespace loom::perf

int main(int argc, char** argv) {
  return loom::perf::perfMain(argc, argv, loom::perf::kReduceScatter);
}
