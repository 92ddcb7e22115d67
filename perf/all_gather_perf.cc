// all_gather_perf: nccl-tests' all-gather benchmark on Loom. `count` is per rank; rows show the
// gathered total (n * count), as nccl-tests does. In place: sendbuff == recvbuff + rank * count.
#include "perf/perf_common.h"

namespace loom::perf {
namespace {

void* sendBuffer(const CallContext& call) {
  return call.inPlace
             ? CallContext::offset(call.recvBase, call.rank * call.count, typeSize(call.type))
             : call.sendBase;
}

void prepare(const CallContext& call, const Pattern& pattern) {
  // The whole output is poisoned first: every block must be written by the collective (in place,
  // the rank's own block is then rewritten with its input).
  poison(call.recvBase, call.bytes(call.count * call.nranks));
  fillInput(sendBuffer(call), call.count, pattern, call.rank, call.rank * call.count);
}

loomResult_t run(const CallContext& call) {
  return loomAllGather(sendBuffer(call), call.recvBase, call.count, call.type, call.comm, nullptr);
}

size_t countWrong(const CallContext& call, const Pattern& pattern) {
  size_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const size_t first = source * call.count;
    wrong += countWrongCopied(CallContext::offset(call.recvBase, first, typeSize(call.type)),
                              call.count, pattern, source, first);
  }
  return wrong;
}

// Each rank receives the n-1 blocks it does not own.
double busFactor(int n) { return double(n - 1) / n; }

constexpr Collective kAllGather{"all_gather", false,   false, true,
                                busFactor,    prepare, run,   countWrong};

}  // namespace
}  // namespace loom::perf

int main(int argc, char** argv) { return loom::perf::perfMain(argc, argv, loom::perf::kAllGather); }
