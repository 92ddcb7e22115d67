// SPDX-License-Identifier: Apache-2.0
// Issue 15: all-to-all, all-to-all-v, gather, scatter, send/recv in groups and the barrier,
// every datatype x in-place and out-of-place (where nccl.h defines it) x odd counts x rank
// counts x shm (direct engine), shm FIFOs and TCP. Every received byte is checked against the
// pattern its sender wrote (mesh_support.h), and every byte outside the promised ranges must
// keep its marker.
//
// CI runs a sample (1, 2, 3, 5 and 8 ranks; counts 0, 1, 7, 1025); LOOM_MESH_GRID=full (test
// mesh_long, suite long) runs 1..8 ranks x counts 0, 1, 7, 1025, 65537 x every root.
#include <gtest/gtest.h>

#include <numeric>

#include "mesh_support.h"

namespace loom::test::mesh {
namespace {

constexpr unsigned char kMarker = 0xa5;

struct Grid {
  std::vector<size_t> counts;
  bool everyRoot;
};

// All-to-all-v's counts: rank i sends count(i, j) elements to rank j, some of them 0, so that
// the pair rule (i's sendcounts[j] == j's recvcounts[i]) holds by construction.
size_t vCount(size_t count, int from, int to) { return (count * static_cast<size_t>(from + 2 * to + 1)) % (count + 3); }

void allToAll(loomComm_t comm, int rank, int n, loomDataType_t type, size_t count, uint64_t salt, const std::string& what) {
  const size_t size = sizeOf(type);
  std::vector<unsigned char> send(n * count * size + 1), recv(n * count * size + 1, kMarker);
  for (int j = 0; j < n; ++j) fill(send.data() + j * count * size, count, size, rank, j, salt);
  check(loomAlltoAll(send.data(), recv.data(), count, type, comm, nullptr), what);
  for (int i = 0; i < n; ++i) expectPattern(recv.data() + i * count * size, count, size, i, rank, salt, what);
  expectUntouched(recv.data() + n * count * size, 1, kMarker, what);
}

void allToAllv(loomComm_t comm, int rank, int n, loomDataType_t type, size_t count, uint64_t salt, const std::string& what) {
  const size_t size = sizeOf(type);
  std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
  size_t sendEnd = 1, recvEnd = 1;  // one element of gap before every block
  for (int j = 0; j < n; ++j) {
    sendCounts[j] = vCount(count, rank, j);
    recvCounts[j] = vCount(count, j, rank);
  }
  for (int j = n - 1; j >= 0; --j) {  // blocks in reverse rank order: displacements are free
    sendDispls[j] = sendEnd;
    sendEnd += sendCounts[j] + 1;
    recvDispls[j] = recvEnd;
    recvEnd += recvCounts[j] + 1;
  }
  std::vector<unsigned char> send(sendEnd * size), recv(recvEnd * size, kMarker);
  for (int j = 0; j < n; ++j) fill(send.data() + sendDispls[j] * size, sendCounts[j], size, rank, j, salt);
  check(loomAlltoAllv(send.data(), sendCounts.data(), sendDispls.data(), recv.data(), recvCounts.data(),
                      recvDispls.data(), type, comm, nullptr),
        what);
  std::vector<bool> promised(recvEnd, false);
  for (int i = 0; i < n; ++i) {
    expectPattern(recv.data() + recvDispls[i] * size, recvCounts[i], size, i, rank, salt, what + " from " + std::to_string(i));
    for (size_t e = 0; e < recvCounts[i]; ++e) promised[recvDispls[i] + e] = true;
  }
  for (size_t e = 0; e < recvEnd; ++e) {
    if (!promised[e]) expectUntouched(recv.data() + e * size, size, kMarker, what + " gap element " + std::to_string(e));
  }
}

void gather(loomComm_t comm, int rank, int n, loomDataType_t type, size_t count, int root, bool inPlace, uint64_t salt,
            const std::string& what) {
  const size_t size = sizeOf(type), block = count * size;
  std::vector<unsigned char> recv(n * block + 1, kMarker), send(block + 1);
  unsigned char* input = inPlace && rank == root ? recv.data() + root * block : send.data();
  fill(input, count, size, rank, root, salt);
  check(loomGather(input, recv.data(), count, type, root, comm, nullptr), what);
  if (rank != root) {
    if (!inPlace) expectUntouched(recv.data(), recv.size(), kMarker, what + " (non-root recvbuff)");
    return;
  }
  for (int i = 0; i < n; ++i) expectPattern(recv.data() + i * block, count, size, i, root, salt, what);
  expectUntouched(recv.data() + n * block, 1, kMarker, what);
}

void scatter(loomComm_t comm, int rank, int n, loomDataType_t type, size_t count, int root, bool inPlace, uint64_t salt,
             const std::string& what) {
  const size_t size = sizeOf(type), block = count * size;
  std::vector<unsigned char> send(n * block + 1, kMarker), recv(block + 1, kMarker);
  if (rank == root) {
    for (int j = 0; j < n; ++j) fill(send.data() + j * block, count, size, root, j, salt);
  }
  unsigned char* output = inPlace && rank == root ? send.data() + root * block : recv.data();
  check(loomScatter(send.data(), output, count, type, root, comm, nullptr), what);
  expectPattern(output, count, size, root, rank, salt, what);
  if (output == recv.data()) expectUntouched(output + block, 1, kMarker, what);
  if (rank != root) expectUntouched(send.data(), send.size(), kMarker, what + " (non-root sendbuff)");
}

// In one group every rank sends to every rank (itself included) before it receives.
void allPairs(loomComm_t comm, int rank, int n, loomDataType_t type, size_t count, uint64_t salt, const std::string& what) {
  const size_t size = sizeOf(type), block = count * size;
  std::vector<unsigned char> send(n * block + 1), recv(n * block + 1, kMarker);
  for (int j = 0; j < n; ++j) fill(send.data() + j * block, count, size, rank, j, salt);
  check(loomGroupStart(), what);
  for (int j = 0; j < n; ++j) check(loomSend(send.data() + j * block, count, type, j, comm, nullptr), what);
  for (int i = 0; i < n; ++i) check(loomRecv(recv.data() + i * block, count, type, i, comm, nullptr), what);
  check(loomGroupEnd(), what);
  for (int i = 0; i < n; ++i) expectPattern(recv.data() + i * block, count, size, i, rank, salt, what);
  expectUntouched(recv.data() + n * block, 1, kMarker, what);
}

void runGrid(int n, const Transport& transport, const Grid& grid) {
  const bool ok = runOnCommunicators(n, transport.env, [&](loomComm_t comm, int rank) {
    uint64_t salt = 1;
    for (size_t count : grid.counts) {
      for (loomDataType_t type : allTypes()) {
        const std::string where = std::string(" of ") + std::to_string(count) + " x " + typeLabel(type) + " on " +
                                  std::to_string(n) + " ranks over " + transport.label;
        allToAll(comm, rank, n, type, count, ++salt, "alltoall" + where);
        allToAllv(comm, rank, n, type, count, ++salt, "alltoallv" + where);
        allPairs(comm, rank, n, type, count, ++salt, "all-pairs send/recv" + where);
        std::vector<int> roots = {0, n - 1};
        if (grid.everyRoot) {
          roots.resize(n);
          std::iota(roots.begin(), roots.end(), 0);
        }
        for (int root : roots) {
          for (bool inPlace : {false, true}) {
            const std::string form = std::string(inPlace ? " in place" : "") + " root " + std::to_string(root) + where;
            gather(comm, rank, n, type, count, root, inPlace, ++salt, "gather" + form);
            scatter(comm, rank, n, type, count, root, inPlace, ++salt, "scatter" + form);
          }
        }
      }
      check(loomBarrier(comm, nullptr), "barrier");
    }
  });
  EXPECT_TRUE(ok) << n << " ranks over " << transport.label;
}

TEST(MeshCollectives, SampleMovesEveryByteExactly) {
  if (fullGrid()) GTEST_SKIP() << "LOOM_MESH_GRID=full: the full grid runs instead";
  const Grid grid{{0, 1, 7, 1025}, false};
  for (const Transport& transport : transports()) {
    for (int n : {1, 2, 3, 5, 8}) {
      if (n == 1 && transport.label != std::string("shm")) continue;  // one rank has no links
      runGrid(n, transport, grid);
    }
  }
}

TEST(MeshCollectives, FullGridMovesEveryByteExactly) {
  if (!fullGrid()) GTEST_SKIP() << "set LOOM_MESH_GRID=full (the mesh_long test) for the full grid";
  const Grid grid{{0, 1, 7, 1025, 65537}, true};
  for (const Transport& transport : transports()) {
    for (int n = 1; n <= 8; ++n) runGrid(n, transport, grid);
  }
}

}  // namespace
}  // namespace loom::test::mesh
