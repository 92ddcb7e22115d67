// SPDX-License-Identifier: Apache-2.0
#include "tests/device/device_case_run.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace loom::test::device {
namespace {

constexpr size_t kGuard = 64;       // bytes around every buffer that no call may touch
constexpr uint8_t kGuardByte = 0xEE;
constexpr uint8_t kUnwritten = 0xA5;  // what an output byte holds before the call

void check(loomResult_t result, const char* what) {
  if (result != loomSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + loomGetErrorString(result) + ": " +
                             loomGetLastError(nullptr));
  }
}

}  // namespace

struct RankRunner::Layout {
  size_t es = 0, count = 0, block = 0;
  bool inPlace = false;       // one buffer holds both (then sendBytes is its size)
  bool sendUsed = true, recvUsed = true;  // an unused buffer is passed as NULL
  size_t sendBytes = 0, recvBytes = 0;    // out of place: each buffer's size
  size_t inputOffset = 0, inputBytes = 0;  // where this rank's input lies in the send buffer
  size_t sendOffset = 0, recvOffset = 0;   // in place: send's and recv's place in the buffer
  bool stream = false;                     // issued on a Loom stream, then synchronized
  VectorCounts vector;
};

RankRunner::RankRunner(loomComm_t comm, int rank, int nranks, DeviceRuntime& runtime, int deviceIndex)
    : comm_(comm), rank_(rank), nranks_(nranks), runtime_(runtime), device_(deviceIndex) {
  runtime_.setCurrentDevice(device_);
  stream_ = runtime_.createStream();
}

RankRunner::~RankRunner() {
  for (void* arena : deviceArenas_) {
    if (arena != nullptr) runtime_.freeDevice(arena);
  }
  if (stream_ != nullptr) runtime_.destroyStream(stream_);
}

void* RankRunner::deviceArena(int which, size_t bytes) {
  if (deviceArenaBytes_[which] < bytes) {
    if (deviceArenas_[which] != nullptr) runtime_.freeDevice(deviceArenas_[which]);
    deviceArenas_[which] = nullptr;
    const size_t grown = std::max(bytes, deviceArenaBytes_[which] * 2);
    deviceArenas_[which] = runtime_.allocDevice(grown);
    deviceArenaBytes_[which] = grown;
  }
  return deviceArenas_[which];
}

RankRunner::Layout RankRunner::layoutOf(const Case& c) const {
  Layout layout;
  layout.es = elementBytes(c.type);
  layout.count = c.count;
  const size_t block = c.count * layout.es, all = block * nranks_;
  layout.block = block;
  const bool isRoot = rank_ == c.root;
  layout.inPlace = c.inPlace;
  layout.inputBytes = block;
  switch (c.coll) {
    case Coll::AllReduce:
    case Coll::SendRecv: layout.sendBytes = layout.recvBytes = block; break;
    case Coll::AllGather:
      layout.sendBytes = block, layout.recvBytes = all;
      layout.sendOffset = block * rank_;
      break;
    case Coll::ReduceScatter:
      layout.sendBytes = all, layout.recvBytes = block, layout.inputBytes = all;
      layout.recvOffset = block * rank_;
      break;
    case Coll::Broadcast:
      layout.sendBytes = layout.recvBytes = block;
      layout.sendUsed = isRoot || c.inPlace;
      if (!isRoot) layout.inputBytes = 0;
      break;
    case Coll::Reduce:
      layout.sendBytes = layout.recvBytes = block;
      layout.recvUsed = isRoot || c.inPlace;
      break;
    case Coll::AllToAll: layout.sendBytes = layout.recvBytes = all, layout.inputBytes = all; break;
    case Coll::AllToAllv:
      layout.vector = vectorCounts(c.count, rank_, nranks_);
      layout.sendBytes = layout.inputBytes = layout.vector.sendExtent * layout.es;
      layout.recvBytes = layout.vector.recvExtent * layout.es;
      break;
    case Coll::Gather:
      layout.sendBytes = block, layout.recvBytes = all;
      layout.recvUsed = isRoot;
      layout.inPlace = c.inPlace && isRoot;
      layout.sendOffset = block * c.root;
      break;
    case Coll::Scatter:
      layout.sendBytes = all, layout.recvBytes = block, layout.inputBytes = isRoot ? all : 0;
      layout.sendUsed = isRoot;
      layout.inPlace = c.inPlace && isRoot;
      layout.recvOffset = block * c.root;
      break;
  }
  if (layout.inPlace) {  // one buffer, the larger of the two; the input where send points
    layout.sendBytes = std::max(layout.sendBytes, layout.recvBytes);
    layout.inputOffset = layout.sendOffset;
    layout.recvUsed = layout.sendUsed = true;
  } else {
    layout.sendOffset = layout.recvOffset = 0;
  }
  return layout;
}

// The bits of rank `rank`'s input element `index` (its send buffer's element `index`).
static uint64_t inputBits(const Case& c, uint64_t seed, int rank, int nranks, size_t index) {
  return reduces(c.coll) ? encode(c.type, inputValue(c, seed, rank, nranks, index)) : movedBits(seed, rank, index);
}

void RankRunner::fillImage(const Case& c, uint64_t seed, const Layout& layout) {
  sendImage_.assign(layout.sendBytes + 2 * kGuard, kGuardByte);
  std::fill_n(sendImage_.begin() + kGuard, layout.sendBytes, kUnwritten);
  for (size_t i = 0; i < layout.inputBytes / std::max<size_t>(layout.es, 1); ++i) {
    const uint64_t bits = inputBits(c, seed, rank_, nranks_, i);
    std::memcpy(sendImage_.data() + kGuard + layout.inputOffset + i * layout.es, &bits, layout.es);
  }
  recvImage_.assign(layout.recvBytes + 2 * kGuard, kGuardByte);
  std::fill_n(recvImage_.begin() + kGuard, layout.recvBytes, kUnwritten);
}

void RankRunner::call(const Case& c, const Layout& layout, void* sendBase, void* recvBase, bool sendIsRecv) {
  char* sendBuffer = static_cast<char*>(sendBase);
  char* recvBuffer = static_cast<char*>(sendIsRecv ? sendBase : recvBase);
  const void* send = layout.sendUsed ? sendBuffer + layout.sendOffset : nullptr;
  void* recv = layout.recvUsed ? recvBuffer + layout.recvOffset : nullptr;
  loomStream_t stream = nullptr;
  if (layout.stream) check(loomStreamCreate(&stream), "loomStreamCreate");
  const size_t n = c.count;
  switch (c.coll) {
    case Coll::AllReduce: check(loomAllReduce(send, recv, n, c.type, c.op, comm_, stream), "loomAllReduce"); break;
    case Coll::AllGather: check(loomAllGather(send, recv, n, c.type, comm_, stream), "loomAllGather"); break;
    case Coll::ReduceScatter:
      check(loomReduceScatter(send, recv, n, c.type, c.op, comm_, stream), "loomReduceScatter");
      break;
    case Coll::Broadcast: check(loomBroadcast(send, recv, n, c.type, c.root, comm_, stream), "loomBroadcast"); break;
    case Coll::Reduce: check(loomReduce(send, recv, n, c.type, c.op, c.root, comm_, stream), "loomReduce"); break;
    case Coll::AllToAll: check(loomAlltoAll(send, recv, n, c.type, comm_, stream), "loomAlltoAll"); break;
    case Coll::AllToAllv: {
      const VectorCounts& v = layout.vector;
      check(loomAlltoAllv(send, v.sendCounts.data(), v.sendDispls.data(), recv, v.recvCounts.data(),
                          v.recvDispls.data(), c.type, comm_, stream),
            "loomAlltoAllv");
      break;
    }
    case Coll::Gather: check(loomGather(send, recv, n, c.type, c.root, comm_, stream), "loomGather"); break;
    case Coll::Scatter: check(loomScatter(send, recv, n, c.type, c.root, comm_, stream), "loomScatter"); break;
    case Coll::SendRecv: {
      const int next = (rank_ + 1) % nranks_, previous = (rank_ + nranks_ - 1) % nranks_;
      check(loomGroupStart(), "loomGroupStart");
      check(loomSend(send, n, c.type, next, comm_, stream), "loomSend");
      check(loomRecv(recv, n, c.type, previous, comm_, stream), "loomRecv");
      check(loomGroupEnd(), "loomGroupEnd");
      break;
    }
  }
  if (stream != nullptr) {
    check(loomStreamSynchronize(stream), "loomStreamSynchronize");
    check(loomStreamDestroy(stream), "loomStreamDestroy");
  }
}

// The reference check of the output buffer `out` (guards included) of the device run.
std::string RankRunner::checkReference(const Case& c, uint64_t seed, const Layout& layout, const uint8_t* out) const {
  const uint8_t* recv = out + kGuard + layout.recvOffset;
  const size_t es = layout.es, count = c.count;
  std::string report;
  size_t bad = 0;
  auto expect = [&](size_t element, uint64_t bits) {
    if (std::memcmp(recv + element * es, &bits, es) == 0) return;
    if (++bad <= 3) {
      uint64_t got = 0;
      std::memcpy(&got, recv + element * es, es);
      char line[96];
      std::snprintf(line, sizeof(line), " [%zu] got 0x%llx want 0x%llx;", element, (unsigned long long)got,
                    (unsigned long long)bits);
      report += line;
    }
  };
  auto input = [&](int rank, size_t index) { return inputBits(c, seed, rank, nranks_, index); };
  auto reduced = [&](size_t index) { return encode(c.type, reducedValue(c, seed, nranks_, index)); };
  const bool isRoot = rank_ == c.root;
  switch (c.coll) {
    case Coll::AllReduce:
      for (size_t i = 0; i < count; ++i) expect(i, reduced(i));
      break;
    case Coll::ReduceScatter:
      for (size_t i = 0; i < count; ++i) expect(i, reduced(rank_ * count + i));
      break;
    case Coll::Reduce:
      if (isRoot) {
        for (size_t i = 0; i < count; ++i) expect(i, reduced(i));
      }
      break;
    case Coll::AllGather:
      for (int peer = 0; peer < nranks_; ++peer) {
        for (size_t i = 0; i < count; ++i) expect(peer * count + i, input(peer, i));
      }
      break;
    case Coll::Broadcast:
      for (size_t i = 0; i < count; ++i) expect(i, input(c.root, i));
      break;
    case Coll::AllToAll:
      for (int peer = 0; peer < nranks_; ++peer) {
        for (size_t i = 0; i < count; ++i) expect(peer * count + i, input(peer, rank_ * count + i));
      }
      break;
    case Coll::AllToAllv: {
      const VectorCounts& mine = layout.vector;
      uint64_t unwritten = 0;
      std::memset(&unwritten, kUnwritten, sizeof(unwritten));
      std::vector<bool> written(mine.recvExtent, false);
      for (int peer = 0; peer < nranks_; ++peer) {
        const VectorCounts theirs = vectorCounts(count, peer, nranks_);
        for (size_t i = 0; i < mine.recvCounts[peer]; ++i) {
          expect(mine.recvDispls[peer] + i, input(peer, theirs.sendDispls[rank_] + i));
          written[mine.recvDispls[peer] + i] = true;
        }
      }
      for (size_t i = 0; i < mine.recvExtent; ++i) {
        if (!written[i]) expect(i, unwritten);  // the gaps keep what they held
      }
      break;
    }
    case Coll::Gather:
      if (isRoot) {
        for (int peer = 0; peer < nranks_; ++peer) {
          for (size_t i = 0; i < count; ++i) expect(peer * count + i, input(peer, i));
        }
      }
      break;
    case Coll::Scatter:
      for (size_t i = 0; i < count; ++i) expect(i, input(c.root, rank_ * count + i));
      break;
    case Coll::SendRecv:
      for (size_t i = 0; i < count; ++i) expect(i, input((rank_ + nranks_ - 1) % nranks_, i));
      break;
  }
  return bad == 0 ? std::string() : std::to_string(bad) + " elements differ from the reference:" + report;
}

std::string RankRunner::run(const Case& c, size_t k) { return run(c, k, c.placement(rank_, k)); }

std::string RankRunner::run(const Case& c, size_t k, Placement placement) {
  const uint64_t seed = 0x5eed0000 + k;
  Layout layout = layoutOf(c);
  layout.stream = k % 7 == 3;  // some calls complete through a Loom stream
  fillImage(c, seed, layout);
  const size_t sendTotal = sendImage_.size(), recvTotal = recvImage_.size();

  // Host buffers: the result every placement must reproduce bit for bit.
  hostSend_ = sendImage_;
  hostRecv_ = recvImage_;
  call(c, layout, hostSend_.data() + kGuard, hostRecv_.data() + kGuard, layout.inPlace);
  hostOut_ = layout.inPlace ? hostSend_ : hostRecv_;

  // The same bytes where the placement puts them.
  runtime_.setCurrentDevice(device_);
  const bool sendDevice = placement.sendDevice, recvDevice = layout.inPlace ? sendDevice : placement.recvDevice;
  std::vector<uint8_t> sendHost = sendImage_, recvHost = recvImage_;
  char* send = sendDevice ? static_cast<char*>(deviceArena(0, sendTotal)) : reinterpret_cast<char*>(sendHost.data());
  char* recv = recvDevice ? static_cast<char*>(deviceArena(1, recvTotal)) : reinterpret_cast<char*>(recvHost.data());
  if (sendDevice) runtime_.copyAsync(send, sendImage_.data(), sendTotal, stream_);
  if (recvDevice && !layout.inPlace) runtime_.copyAsync(recv, recvImage_.data(), recvTotal, stream_);
  runtime_.synchronize(stream_, 60000);
  call(c, layout, send + kGuard, recv + kGuard, layout.inPlace);

  const char* outBuffer = layout.inPlace ? send : recv;
  const size_t outTotal = layout.inPlace ? sendTotal : recvTotal;
  deviceOut_.resize(outTotal);
  std::vector<uint8_t> sendAfter(sendTotal);
  runtime_.copyAsync(deviceOut_.data(), outBuffer, outTotal, stream_);
  if (!layout.inPlace) runtime_.copyAsync(sendAfter.data(), send, sendTotal, stream_);
  runtime_.synchronize(stream_, 60000);

  std::string where = " (send on " + std::string(sendDevice ? "device" : "host") + ", recv on " +
                      (recvDevice ? "device" : "host") + ")";
  if (deviceOut_ != hostOut_) {
    size_t first = 0;
    while (first < outTotal && deviceOut_[first] == hostOut_[first]) ++first;
    const bool guard = first < kGuard || first >= outTotal - kGuard;
    return "output differs from the host-buffer run at byte " + std::to_string(first) +
           (guard ? " (a guard byte: written outside the buffer)" : "") + where;
  }
  if (!layout.inPlace && sendAfter != sendImage_) return "the call changed its send buffer" + where;
  const std::string reference = checkReference(c, seed, layout, deviceOut_.data());
  return reference.empty() ? reference : reference + where;
}

}  // namespace loom::test::device
