// SPDX-License-Identifier: Apache-2.0
// Dissemination barrier (Hensgen, Finkel and Manber): in round k = 0, 1, ... rank r sends one
// byte to r + 2^k and receives one from r - 2^k (mod n), and starts round k+1 only once round
// k's byte has arrived. After ceil(log2 n) rounds every rank has heard, directly or through a
// chain of rounds, from every other, so none can leave before all have entered. 2 ranks: one
// round; 8: three; no root and no fan-in bottleneck.
//
// Scratch byte 0 is what is sent (its value is never read); byte 1 + k receives round k's.
// Round k's receive also waits for round k-1's: otherwise a round's send would carry only what
// the previous round's message knew, not everything heard before it, and for n = 6..8 and
// 10..16 a rank could finish before some rank had entered (n = 8: rank 0 never hears of rank 3;
// tests/unit/test_schedules_mesh.cc proves the property with the simulator's causality).
#include "algorithms/schedule.h"

namespace loom::algo {

Schedule disseminationBarrier(const CollectiveShape& shape) {
  const int n = shape.nranks;
  Schedule schedule;
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  int previousRecv = -1;
  for (int k = 0; k < rounds; ++k) {
    const int distance = 1 << k;
    Step send{StepKind::Send, (shape.rank + distance) % n, {}, Range{Buffer::Scratch, 0, 1}};
    send.dependsOn = previousRecv;
    schedule.steps.push_back(send);
    Step recv{StepKind::Recv, (shape.rank - distance % n + n) % n, Range{Buffer::Scratch, 1 + static_cast<size_t>(k), 1}, {}};
    recv.dependsOn = previousRecv;
    schedule.steps.push_back(recv);
    previousRecv = static_cast<int>(schedule.steps.size()) - 1;
  }
  schedule.scratchBytes = rounds > 0 ? 1 + static_cast<size_t>(rounds) : 0;
  schedule.measure();
  return schedule;
}

}  // namespace loom::algo
