// SPDX-License-Identifier: Apache-2.0
#include "peer_batches.h"

#include <map>
#include <utility>

#include "base/error.h"

namespace loom::algo {

namespace {

// Operation indices by (from, to), in issue order: the sends of each pair, or the receives.
using PairOperations = std::map<std::pair<int, int>, std::vector<size_t>>;

void collect(const BatchProgram& batch, PairOperations& sends, PairOperations& recvs) {
  for (size_t r = 0; r < batch.size(); ++r) {
    const int rank = static_cast<int>(r);
    for (size_t k = 0; k < batch[r].size(); ++k) {
      const PeerOperation& operation = batch[r][k];
      if (operation.peer < 0 || operation.peer >= static_cast<int>(batch.size())) {
        throwArgument("rank " + std::to_string(r) + " operation " + std::to_string(k) + ": no peer " +
                      std::to_string(operation.peer));
      }
      if (operation.send) sends[{rank, operation.peer}].push_back(k);
      else recvs[{operation.peer, rank}].push_back(k);
    }
  }
}

std::string pairName(const std::pair<int, int>& pair) {
  return "rank " + std::to_string(pair.first) + " to rank " + std::to_string(pair.second);
}

}  // namespace

void numberMessages(BatchProgram& batch) {
  for (std::vector<PeerOperation>& operations : batch) {
    std::map<std::pair<bool, int>, uint64_t> placed;  // (send, peer) -> operations so far
    for (PeerOperation& operation : operations) operation.message = ++placed[{operation.send, operation.peer}];
  }
}

std::vector<RankProgram> batchPrograms(const BatchProgram& batch) {
  std::vector<RankProgram> programs(batch.size());
  for (size_t r = 0; r < batch.size(); ++r) {
    RankProgram& program = programs[r];
    program.schedule = pointToPointBatch(static_cast<int>(r), batch[r]);
    program.buffers.assign(kFirstUserBuffer, Region{});  // a batch has no send, recv or scratch
    for (const PeerOperation& operation : batch[r]) {
      program.buffers.push_back(Region{true, program.arenaBytes, operation.bytes});
      program.arenaBytes += operation.bytes;
    }
  }
  return programs;
}

Promise batchPromise(const BatchProgram& batch, const std::vector<RankProgram>& programs) {
  PairOperations sends, recvs;
  collect(batch, sends, recvs);
  for (const auto& entry : sends) recvs[entry.first];  // pairs with sends only are checked too
  Promise promise(programs);
  for (const auto& [pair, received] : recvs) {
    const auto& [from, to] = pair;
    const std::vector<size_t>& sent = sends[pair];
    if (sent.size() != received.size()) {
      throwArgument(pairName(pair) + ": " + std::to_string(sent.size()) + " sends but " +
                    std::to_string(received.size()) + " receives");
    }
    for (size_t m = 0; m < sent.size(); ++m) {
      const size_t bytes = batch[from][sent[m]].bytes;
      if (batch[to][received[m]].bytes != bytes) {
        throwArgument(pairName(pair) + ": message " + std::to_string(m + 1) + " is sent with " +
                      std::to_string(bytes) + " bytes and received with " +
                      std::to_string(batch[to][received[m]].bytes));
      }
      const Region& source = programs[from].buffers[kFirstUserBuffer + sent[m]];
      const Region& sink = programs[to].buffers[kFirstUserBuffer + received[m]];
      promise.holds(to, sink.at, from, source.at, bytes);
    }
  }
  return promise;
}

std::string proveBatch(const BatchProgram& batch, MovementResult* result) {
  try {
    const std::vector<RankProgram> programs = batchPrograms(batch);
    const Promise promise = batchPromise(batch, programs);
    MovementResult simulated = simulateMovement(programs);
    std::string wrong = verifyPromise(programs, promise, simulated);
    if (result != nullptr) *result = std::move(simulated);
    return wrong;
  } catch (const Error& error) {
    return error.what();
  }
}

}  // namespace loom::algo
