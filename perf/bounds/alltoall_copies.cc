// SPDX-License-Identifier: Apache-2.0
// alltoall_copies: the floors of a 2-process all-to-all on this host, one per way shared memory
// can carry it. Each process has --bytes of input in two blocks: block r stays (a local copy
// into its output), the other goes to the peer. Per call:
//  - fifo: the outgoing block is copied into a FIFO of slots in shared memory and copied out of
//    it by the peer (two copies), slot by slot, as Loom's shm transport does (8 slots of 128 KiB,
//    its defaults: --slots, --slot-bytes); each process fills what slots it can, copies its own
//    block, then alternates one slot out and one slot in;
//  - cma: the peer's block is read straight out of its memory with process_vm_readv (one copy,
//    made by the kernel), as OpenMPI's shared-memory BTL does with its default single-copy
//    mechanism; then each process tells the other it is done and waits for the same, so an
//    input is not reused before it was read (what MPI_Alltoall's return promises).
// The code is the least each design needs: no tags, matching, checks or progress engine, so a
// library's time over it is its own overhead, and the gap between the two is what the design
// costs here. The last call's output is checked (each block holds its sender's pattern).
//
//   alltoall_copies [--bytes 1048576] [--iters N] [--reps 5] [--slots 8] [--slot-bytes 131072] [--json]
//
// Figures: microseconds per call (median over repetitions) and nccl-tests' busbw for an
// all-to-all of n = 2 (bytes x (n-1)/n per second). cma is reported as unavailable when the
// kernel refuses process_vm_readv (ptrace rules), with the errno.
#include <sys/prctl.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "perf/bounds/bounds_support.h"
#include "perf/bounds/process_team.h"

namespace {

using loom::bounds::SharedRegion;

struct alignas(64) Counter {
  std::atomic<long> value;
};

// One direction's FIFO: `head` slots written and `tail` slots read over its life.
struct FifoControl {
  Counter head;
  Counter tail;
};

struct Shared {
  FifoControl fifo[2];   // fifo[r]: from process r to the other
  Counter done[2];       // cma: calls completed by process r
  Counter cmaErrno[2];   // cma: the errno of a refused read, 0 when none
  Counter wrong[2];      // output bytes that did not match, per process
  double perCallUs[2];   // rank 0's medians: fifo, cma
};

struct Config {
  size_t bytes;  // per process: two blocks of bytes / 2
  long iters;
  int reps;
  size_t slots;
  size_t slotBytes;
};

unsigned char pattern(int sender, size_t offset) { return static_cast<unsigned char>(sender * 101 + offset % 251); }

// Block `sender` of process `rank`'s output is block `rank` of the sender's input.
size_t checkOutput(int rank, const unsigned char* output, size_t block) {
  size_t wrong = 0;
  for (int sender = 0; sender < 2; ++sender) {
    for (size_t k = 0; k < block; ++k) wrong += output[sender * block + k] != pattern(sender, rank * block + k);
  }
  return wrong;
}

// One process's side of the FIFO design: calls (first, last].
void fifoCalls(const Config& config, Shared& shared, unsigned char* ring[2], int rank, const unsigned char* input,
               unsigned char* output, long first, long last) {
  const size_t block = config.bytes / 2;
  const int peer = 1 - rank;
  const size_t pieces = (block + config.slotBytes - 1) / config.slotBytes;
  FifoControl& out = shared.fifo[rank];
  FifoControl& in = shared.fifo[peer];
  unsigned char* outRing = ring[rank];
  const unsigned char* inRing = ring[peer];
  for (long call = first; call < last; ++call) {
    const long base = call * static_cast<long>(pieces);  // slots of earlier calls, each direction
    size_t sent = 0, received = 0;
    bool ownCopied = false;
    for (int idle = 0; sent < pieces || received < pieces || !ownCopied;) {
      bool moved = false;
      // Fill every free slot, then copy the own block, then alternate a slot out and a slot in.
      while (sent < pieces &&
             base + static_cast<long>(sent) - out.tail.value.load(std::memory_order_acquire) <
                 static_cast<long>(config.slots)) {
        const size_t offset = sent * config.slotBytes;
        const size_t length = std::min(config.slotBytes, block - offset);
        const size_t slot = static_cast<size_t>(base + static_cast<long>(sent)) % config.slots;
        std::memcpy(outRing + slot * config.slotBytes, input + static_cast<size_t>(peer) * block + offset, length);
        out.head.value.store(base + static_cast<long>(++sent), std::memory_order_release);
        moved = true;
        if (ownCopied) break;
      }
      if (!ownCopied) {
        std::memcpy(output + static_cast<size_t>(rank) * block, input + static_cast<size_t>(rank) * block, block);
        ownCopied = true;
        continue;
      }
      if (received < pieces && in.head.value.load(std::memory_order_acquire) > base + static_cast<long>(received)) {
        const size_t offset = received * config.slotBytes;
        const size_t length = std::min(config.slotBytes, block - offset);
        const size_t slot = static_cast<size_t>(base + static_cast<long>(received)) % config.slots;
        std::memcpy(output + static_cast<size_t>(peer) * block + offset, inRing + slot * config.slotBytes, length);
        in.tail.value.store(base + static_cast<long>(++received), std::memory_order_release);
        moved = true;
      }
      idle = moved ? 0 : idle + 1;
      loom::bounds::waitBriefly(idle);
    }
  }
}

// One process's side of the single-copy design: calls (first, last]. Returns false (errno in
// shared.cmaErrno) when the kernel refuses the read.
bool cmaCalls(const Config& config, Shared& shared, int rank, pid_t peerPid, const unsigned char* peerInput,
              const unsigned char* input, unsigned char* output, long first, long last) {
  const size_t block = config.bytes / 2;
  const int peer = 1 - rank;
  for (long call = first; call < last; ++call) {
    std::memcpy(output + static_cast<size_t>(rank) * block, input + static_cast<size_t>(rank) * block, block);
    size_t got = 0;
    while (got < block) {
      iovec local{output + static_cast<size_t>(peer) * block + got, block - got};
      iovec remote{const_cast<unsigned char*>(peerInput) + static_cast<size_t>(rank) * block + got, block - got};
      const ssize_t n = process_vm_readv(peerPid, &local, 1, &remote, 1, 0);
      if (n <= 0) {
        shared.cmaErrno[rank].value.store(n < 0 ? errno : EIO, std::memory_order_release);
        shared.done[rank].value.store(-1, std::memory_order_release);  // the peer stops waiting
        return false;
      }
      got += static_cast<size_t>(n);
    }
    shared.done[rank].value.store(call + 1, std::memory_order_release);
    for (int idle = 0;;) {
      const long peerDone = shared.done[peer].value.load(std::memory_order_acquire);
      if (peerDone < 0) return false;
      if (peerDone >= call + 1) break;
      loom::bounds::waitBriefly(++idle);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv,
                                     "[--bytes N (1048576)] [--iters N (by size)] [--reps N (5)] [--slots N (8)] "
                                     "[--slot-bytes N (131072)] [--json]");
  Config config;
  config.bytes = static_cast<size_t>(args.number("bytes", 1 << 20, 128, 1 << 30)) & ~size_t{127};
  // About 0.1 s per repetition at this VM's rates (three block copies at ~20 GB/s and ~2 us of
  // handshakes a call), at least 3 calls.
  const double defaultIters = std::max(3.0, 0.1 / (1.5 * static_cast<double>(config.bytes) / 2e10 + 2e-6));
  config.iters = static_cast<long>(args.number("iters", defaultIters, 1, 1e9));
  config.reps = static_cast<int>(args.number("reps", 5, 1, 1000));
  config.slots = static_cast<size_t>(args.number("slots", 8, 1, 1024));
  config.slotBytes = static_cast<size_t>(args.number("slot-bytes", 131072, 64, 64 << 20));
  const bool json = args.flag("json");
  args.rejectUnknown();
  const size_t block = config.bytes / 2;

  SharedRegion control(sizeof(Shared));
  Shared& shared = *new (control.bytes()) Shared{};
  SharedRegion rings(2 * config.slots * config.slotBytes);
  unsigned char* ring[2] = {rings.bytes(), rings.bytes() + config.slots * config.slotBytes};
  // Each process's input sits at the same address in both (allocated before the fork, then
  // written by its owner, so the pages are its own): the peer reads it there with cma.
  loom::bounds::TouchedBuffer inputs(config.bytes);
  const int status = loom::bounds::runProcesses(2, [&](int rank, const pid_t* pids) {
    // Yama's ptrace_scope 1 lets a process read only its descendants unless it allows others.
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    unsigned char* input = inputs.bytes();
    for (size_t k = 0; k < config.bytes; ++k) input[k] = pattern(rank, k);
    loom::bounds::TouchedBuffer output(config.bytes);
    const long warm = config.iters / 10 + 1;
    long done = 0;
    std::vector<double> fifoTimes, cmaTimes;
    fifoCalls(config, shared, ring, rank, input, output.bytes(), done, done + warm);
    done += warm;
    for (int rep = 0; rep < config.reps; ++rep) {
      const double seconds = loom::bounds::timeSeconds(
          [&] { fifoCalls(config, shared, ring, rank, input, output.bytes(), done, done + config.iters); });
      done += config.iters;
      fifoTimes.push_back(seconds * 1e6 / double(config.iters));
    }
    size_t wrong = checkOutput(rank, output.bytes(), block);
    std::memset(output.bytes(), 0, config.bytes);
    bool cmaWorks = cmaCalls(config, shared, rank, pids[1 - rank], input, input, output.bytes(), 0, warm);
    for (int rep = 0; cmaWorks && rep < config.reps; ++rep) {
      const long from = warm + rep * config.iters;
      double seconds = loom::bounds::timeSeconds([&] {
        cmaWorks = cmaCalls(config, shared, rank, pids[1 - rank], input, input, output.bytes(), from,
                            from + config.iters);
      });
      cmaTimes.push_back(seconds * 1e6 / double(config.iters));
    }
    if (cmaWorks) wrong += checkOutput(rank, output.bytes(), block);
    shared.wrong[rank].value.store(static_cast<long>(wrong), std::memory_order_release);
    if (rank == 0) {
      shared.perCallUs[0] = loom::bounds::median(fifoTimes);
      shared.perCallUs[1] = cmaWorks ? loom::bounds::median(cmaTimes) : -1;
    }
    return 0;
  });
  if (status != 0) {
    std::fprintf(stderr, "alltoall_copies: a process failed\n");
    return 1;
  }
  const long wrong = shared.wrong[0].value.load() + shared.wrong[1].value.load();
  if (wrong != 0) {
    std::fprintf(stderr, "alltoall_copies: %ld output bytes wrong\n", wrong);
    return 1;
  }
  const double fifoUs = shared.perCallUs[0], cmaUs = shared.perCallUs[1];
  const long cmaError = std::max(shared.cmaErrno[0].value.load(), shared.cmaErrno[1].value.load());
  auto busGbps = [&](double us) { return static_cast<double>(config.bytes) / 2 / (us * 1e-6) / loom::bounds::kGB; };
  loom::bounds::JsonLine line;
  line.add("tool", "alltoall_copies").add("bytes", static_cast<double>(config.bytes));
  line.add("fifo_us", fifoUs).add("fifo_busbw_gbps", busGbps(fifoUs));
  if (cmaUs > 0) {
    line.add("cma_us", cmaUs).add("cma_busbw_gbps", busGbps(cmaUs));
  } else {
    line.add("cma_unavailable", std::string(std::strerror(static_cast<int>(cmaError))));
  }
  if (json) {
    std::printf("%s\n", line.str().c_str());
    return 0;
  }
  std::printf("# 2-process all-to-all of %zu bytes per process, medians of %d repetitions of %ld calls\n",
              config.bytes, config.reps, config.iters);
  std::printf("fifo (two copies, %zu slots of %zu B): %.2f us, busbw %.2f GB/s\n", config.slots, config.slotBytes,
              fifoUs, busGbps(fifoUs));
  if (cmaUs > 0) {
    std::printf("cma (one copy, process_vm_readv):   %.2f us, busbw %.2f GB/s\n", cmaUs, busGbps(cmaUs));
  } else {
    std::printf("cma: unavailable (%s)\n", std::strerror(static_cast<int>(cmaError)));
  }
  return 0;
}
