// SPDX-License-Identifier: Apache-2.0
#include "tests/hosts/host_rank_mesh.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::test {

namespace {

// Element i of what `from` sends to `to`: unique per (from, to, i).
int32_t value(int from, int to, size_t i) { return static_cast<int32_t>(from * 1000003 + to * 7919 + i); }

void call(loomResult_t rc, const char* what) {
  if (rc != loomSuccess) throw std::runtime_error(std::string(what) + ": " + loomGetLastError(nullptr));
}

// Compares `got` with want(i); prints the first mismatch. Returns 1 when wrong.
template <class Want>
int expect(const std::vector<int32_t>& got, Want want, const std::string& what) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want(i)) {
      std::printf("FAIL %s: element %zu is %d, want %d\n", what.c_str(), i, got[i], want(i));
      return 1;
    }
  }
  return 0;
}

// Per-pair counts for all-to-all-v and the all-pairs exchange: uneven, some zero.
size_t pairCount(int from, int to) { return static_cast<size_t>((from * 3 + to * 5) % 7) * 131; }

}  // namespace

int checkMeshCollectives(loomComm_t comm, int rank, int n) {
  int wrong = 0;
  const size_t count = 1001;
  {  // all-to-all: block j of the input goes to rank j
    std::vector<int32_t> send(count * n), recv(count * n, -1);
    for (int to = 0; to < n; ++to)
      for (size_t i = 0; i < count; ++i) send[to * count + i] = value(rank, to, i);
    call(loomAlltoAll(send.data(), recv.data(), count, loomInt32, comm, nullptr), "all-to-all");
    wrong += expect(recv, [&](size_t k) { return value(static_cast<int>(k / count), rank, k % count); }, "all-to-all");
  }
  {  // all-to-all-v with uneven counts, packed in rank order
    std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
    size_t sendTotal = 0, recvTotal = 0;
    for (int peer = 0; peer < n; ++peer) {
      sendCounts[peer] = pairCount(rank, peer), sendDispls[peer] = sendTotal, sendTotal += sendCounts[peer];
      recvCounts[peer] = pairCount(peer, rank), recvDispls[peer] = recvTotal, recvTotal += recvCounts[peer];
    }
    std::vector<int32_t> send(sendTotal), recv(recvTotal, -1), want(recvTotal);
    for (int peer = 0; peer < n; ++peer) {
      for (size_t i = 0; i < sendCounts[peer]; ++i) send[sendDispls[peer] + i] = value(rank, peer, i);
      for (size_t i = 0; i < recvCounts[peer]; ++i) want[recvDispls[peer] + i] = value(peer, rank, i);
    }
    call(loomAlltoAllv(send.data(), sendCounts.data(), sendDispls.data(), recv.data(), recvCounts.data(),
                       recvDispls.data(), loomInt32, comm, nullptr),
         "all-to-all-v");
    wrong += expect(recv, [&](size_t k) { return want[k]; }, "all-to-all-v");
  }
  {  // gather to the last rank, scatter from the first
    const int root = n - 1;
    std::vector<int32_t> mine(count), gathered(rank == root ? count * n : 0, -1);
    for (size_t i = 0; i < count; ++i) mine[i] = value(rank, root, i);
    call(loomGather(mine.data(), rank == root ? gathered.data() : nullptr, count, loomInt32, root, comm, nullptr),
         "gather");
    wrong += expect(gathered, [&](size_t k) { return value(static_cast<int>(k / count), root, k % count); }, "gather");
    std::vector<int32_t> scattered(count, -1), source(rank == 0 ? count * n : 0);
    for (size_t k = 0; k < source.size(); ++k) source[k] = value(0, static_cast<int>(k / count), k % count);
    call(loomScatter(rank == 0 ? source.data() : nullptr, scattered.data(), count, loomInt32, 0, comm, nullptr),
         "scatter");
    wrong += expect(scattered, [&](size_t i) { return value(0, rank, i); }, "scatter");
  }
  {  // a ring of sends and receives, odd count
    const size_t ringCount = 7777;
    const int right = (rank + 1) % n, left = (rank + n - 1) % n;
    std::vector<int32_t> send(ringCount), recv(ringCount, -1);
    for (size_t i = 0; i < ringCount; ++i) send[i] = value(rank, right, i);
    call(loomGroupStart(), "group start");
    call(loomSend(send.data(), ringCount, loomInt32, right, comm, nullptr), "send");
    call(loomRecv(recv.data(), ringCount, loomInt32, left, comm, nullptr), "recv");
    call(loomGroupEnd(), "send/recv ring");
    wrong += expect(recv, [&](size_t i) { return value(left, rank, i); }, "send/recv ring");
  }
  {  // every pair at once, uneven counts, in one group
    std::vector<std::vector<int32_t>> sends(n), recvs(n);
    call(loomGroupStart(), "group start");
    for (int peer = 0; peer < n; ++peer) {
      sends[peer].resize(pairCount(rank, peer));
      for (size_t i = 0; i < sends[peer].size(); ++i) sends[peer][i] = value(rank, peer, i);
      recvs[peer].assign(pairCount(peer, rank), -1);
      call(loomSend(sends[peer].data(), sends[peer].size(), loomInt32, peer, comm, nullptr), "send");
      call(loomRecv(recvs[peer].data(), recvs[peer].size(), loomInt32, peer, comm, nullptr), "recv");
    }
    call(loomGroupEnd(), "all-pairs send/recv");
    for (int peer = 0; peer < n; ++peer) {
      wrong += expect(recvs[peer], [&](size_t i) { return value(peer, rank, i); },
                      "send/recv from rank " + std::to_string(peer));
    }
  }
  call(loomBarrier(comm, nullptr), "barrier");
  return wrong;
}

}  // namespace loom::test
