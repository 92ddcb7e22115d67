// SPDX-License-Identifier: Apache-2.0
#include "core/device_staging.h"

#include <algorithm>

#include "base/datatype.h"
#include "base/error.h"
#include "device/device_select.h"

namespace loom {

DeviceGuard::DeviceGuard(DeviceRuntime& runtime, int device) : runtime_(runtime), previous_(runtime.currentDevice()) {
  if (previous_ != device) runtime_.setCurrentDevice(device);
}

DeviceGuard::~DeviceGuard() {
  try {
    if (runtime_.currentDevice() != previous_) runtime_.setCurrentDevice(previous_);
  } catch (...) {  // the device failed; the error that matters was reported where it happened
  }
}

DeviceStaging::~DeviceStaging() {
  if (runtime_ == nullptr) return;
  settle(1000);
  for (DeviceEvent event : events_) runtime_->destroyEvent(event);
  if (in_ != nullptr) runtime_->destroyStream(in_);
  if (out_ != nullptr) runtime_->destroyStream(out_);
  if (host_ != nullptr) runtime_->freePinnedHost(host_);
}

namespace {
constexpr size_t kHostAlignment = 64;  // a copy keeps its device address's place in a cache line
// The most input pieces a call is cut into, so the events (one per piece, kept for the next
// calls) stay few whatever LOOM_DEVICE_COPY_BYTES and the call's size.
constexpr size_t kMostInputPieces = 1024;
}  // namespace

void DeviceStaging::addRegion(const void* pointer, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(pointer);
  regions_.push_back(Region{begin, begin + bytes, 0});
}

// Overlapping regions (a call's in-place buffers) become one, so pointers into either keep
// their distance on the host.
void DeviceStaging::layOutRegions() {
  std::sort(regions_.begin(), regions_.end(), [](const Region& a, const Region& b) { return a.begin < b.begin; });
  std::vector<Region> merged;
  for (const Region& region : regions_) {
    if (!merged.empty() && region.begin < merged.back().end) {
      merged.back().end = std::max(merged.back().end, region.end);
    } else {
      merged.push_back(region);
    }
  }
  size_t cursor = 0;
  for (Region& region : merged) {
    cursor = (cursor + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    region.hostOffset = cursor + region.begin % kHostAlignment;
    cursor = region.hostOffset + (region.end - region.begin);
  }
  regions_ = std::move(merged);
  reserveHost(cursor);
}

void DeviceStaging::reserveHost(size_t bytes) {
  if (bytes <= hostBytes_) return;
  // Grown in powers of two (from 1 MiB), so a job of growing calls reallocates a few times.
  size_t grown = std::max<size_t>(hostBytes_, size_t{1} << 20);
  while (grown < bytes) grown *= 2;
  if (host_ != nullptr) runtime_->freePinnedHost(host_);
  host_ = nullptr;
  hostBytes_ = 0;
  host_ = static_cast<char*>(runtime_->allocPinnedHost(grown));
  hostBytes_ = grown;
}

void* DeviceStaging::hostAddress(const void* devicePointer) const {
  const auto address = reinterpret_cast<uintptr_t>(devicePointer);
  for (const Region& region : regions_) {
    if (address >= region.begin && address < region.end) return host_ + region.hostOffset + (address - region.begin);
  }
  throwInternal("device staging: " + pointerText(devicePointer) + " is in no staged region");
}

void DeviceStaging::addInput(const void* device, size_t bytes, size_t pieceBytes) {
  const auto base = reinterpret_cast<uintptr_t>(device);
  const auto host = reinterpret_cast<uintptr_t>(hostAddress(device));
  const size_t step = pieceBytes == 0 ? bytes : pieceBytes;
  for (size_t offset = 0; offset < bytes; offset += step) {
    inputs_.push_back(Piece{host + offset, base + offset, std::min(step, bytes - offset)});
  }
}

void DeviceStaging::addOutput(const void* device, size_t bytes) {
  outputs_.push_back(
      Piece{reinterpret_cast<uintptr_t>(hostAddress(device)), reinterpret_cast<uintptr_t>(device), bytes});
}

std::span<const algo::CallSpec> DeviceStaging::stageIn(std::span<const algo::CallSpec> calls, int device, int rank,
                                                       int nranks, size_t pieceBytes) {
  if (runtime_ == nullptr) runtime_ = &device::processRuntime();
  if (in_ == nullptr || device_ != device) {
    for (DeviceEvent event : events_) runtime_->destroyEvent(event);
    events_.clear();
    for (DeviceStream* stream : {&in_, &out_}) {
      if (*stream != nullptr) runtime_->destroyStream(*stream);
      *stream = nullptr;
    }
    in_ = runtime_->createStream();
    out_ = runtime_->createStream();
    device_ = device;
  }
  regions_.clear();
  inputs_.clear();
  outputs_.clear();
  sentBack_.clear();
  pendingBegin_ = pendingEnd_ = 0;
  queued_ = landed_ = 0;
  pieceBytes_ = pieceBytes;
  for (const algo::CallSpec& call : calls) {
    const algo::BufferExtents extents = algo::bufferExtents(call, rank, nranks);
    if (call.deviceBuffers & algo::CallSpec::kDeviceSend) addRegion(call.send, extents.send);
    if (call.deviceBuffers & algo::CallSpec::kDeviceRecv) addRegion(call.recv, extents.recv);
    if (call.deviceBuffers & algo::CallSpec::kDeviceScalar) addRegion(call.premul.memory, typeSize(call.type));
  }
  layOutRegions();
  // At most about kMostInputPieces pieces (and events): a huge input gets larger pieces.
  size_t inputBytes = 0;
  for (const algo::CallSpec& call : calls) {
    if (call.deviceBuffers & algo::CallSpec::kDeviceSend) inputBytes += algo::bufferExtents(call, rank, nranks).send;
  }
  if (pieceBytes != 0) pieceBytes = std::max(pieceBytes, (inputBytes + kMostInputPieces - 1) / kMostInputPieces);
  for (const algo::CallSpec& call : calls) {
    const algo::BufferExtents extents = algo::bufferExtents(call, rank, nranks);
    if ((call.deviceBuffers & algo::CallSpec::kDeviceSend) && extents.send > 0) {
      addInput(call.send, extents.send, pieceBytes);
    }
    if (call.deviceBuffers & algo::CallSpec::kDeviceScalar) addInput(call.premul.memory, typeSize(call.type), 0);
    if ((call.deviceBuffers & algo::CallSpec::kDeviceRecv) && extents.recv > 0) {
      const char* recv = static_cast<const char*>(call.recv);
      if (call.collective == algo::Collective::AllToAllv) {
        // Only the blocks the call writes go back: what lies between them stays as it was.
        const size_t element = typeSize(call.type);
        for (size_t peer = 0; peer < call.layout->recvCounts.size(); ++peer) {
          const size_t count = call.layout->recvCounts[peer];
          if (count > 0) addOutput(recv + call.layout->recvDispls[peer] * element, count * element);
        }
      } else {
        addOutput(recv, extents.recv);
      }
    }
  }
  const auto byHost = [](const Piece& a, const Piece& b) { return a.host < b.host; };
  std::sort(inputs_.begin(), inputs_.end(), byHost);
  std::sort(outputs_.begin(), outputs_.end(), byHost);
  mergeOverlapping(inputs_);
  mergeOverlapping(outputs_);

  staged_.assign(calls.begin(), calls.end());
  for (algo::CallSpec& call : staged_) {
    if (call.deviceBuffers & algo::CallSpec::kDeviceSend) call.send = hostAddress(call.send);
    if (call.deviceBuffers & algo::CallSpec::kDeviceRecv) call.recv = static_cast<void*>(hostAddress(call.recv));
    if (call.deviceBuffers & algo::CallSpec::kDeviceScalar) call.premul.memory = hostAddress(call.premul.memory);
    call.deviceBuffers = 0;
  }
  return staged_;
}

// A batch may send one buffer twice, or receive into overlapping buffers: overlapping pieces
// would break `overlapping`'s binary search, so they become one (sorted by host address; one pass).
void DeviceStaging::mergeOverlapping(std::vector<Piece>& pieces) {
  size_t kept = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (kept > 0 && pieces[kept - 1].host + pieces[kept - 1].bytes > pieces[i].host) {
      Piece& last = pieces[kept - 1];
      last.bytes = std::max(last.host + last.bytes, pieces[i].host + pieces[i].bytes) - last.host;
    } else {
      pieces[kept++] = pieces[i];
    }
  }
  pieces.resize(kept);
}

std::pair<size_t, size_t> DeviceStaging::overlapping(const std::vector<Piece>& pieces, uintptr_t begin, uintptr_t end) {
  // The first piece that ends after `begin`, then every one that starts before `end`.
  size_t first = static_cast<size_t>(
      std::partition_point(pieces.begin(), pieces.end(), [begin](const Piece& p) { return p.host + p.bytes <= begin; }) -
      pieces.begin());
  size_t last = first;
  while (last < pieces.size() && pieces[last].host < end) ++last;
  return {first, last};
}

void DeviceStaging::queueInput(Piece& piece) {
  if (piece.order >= 0) return;
  runtime_->copyAsync(reinterpret_cast<void*>(piece.host), reinterpret_cast<const void*>(piece.device), piece.bytes,
                      in_);
  if (events_.size() == queued_) events_.push_back(runtime_->createEvent());
  runtime_->record(events_[queued_], in_);
  piece.order = static_cast<int>(queued_++);
}

void DeviceStaging::expect(const char* begin, size_t bytes) {
  if (queued_ == inputs_.size()) return;
  const auto address = reinterpret_cast<uintptr_t>(begin);
  const auto [first, last] = overlapping(inputs_, address, address + bytes);
  for (size_t i = first; i < last; ++i) queueInput(inputs_[i]);
}

void DeviceStaging::startInput() {
  for (Piece& piece : inputs_) queueInput(piece);
}

bool DeviceStaging::arrived(const char* begin, size_t bytes) {
  if (landed_ == inputs_.size()) return true;
  const auto address = reinterpret_cast<uintptr_t>(begin);
  const auto [first, last] = overlapping(inputs_, address, address + bytes);
  for (size_t i = first; i < last; ++i) {
    const int order = inputs_[i].order;
    if (order < 0) return false;  // not queued: expect() and startInput() queue every piece
    // Input copies complete in stream order: the events after `landed_` are asked in turn.
    while (landed_ <= static_cast<size_t>(order)) {
      if (!runtime_->query(events_[landed_])) return false;
      ++landed_;
    }
  }
  return true;
}

void DeviceStaging::awaitInput(int timeoutMs) {
  startInput();
  runtime_->synchronize(in_, timeoutMs);
  landed_ = queued_;
}

void DeviceStaging::sendBack(uintptr_t host, size_t bytes) {
  const auto [first, last] = overlapping(outputs_, host, host + bytes);
  for (size_t i = first; i < last; ++i) {
    const Piece& piece = outputs_[i];
    const uintptr_t begin = std::max(host, piece.host);
    const uintptr_t end = std::min(host + bytes, piece.host + piece.bytes);
    if (begin >= end) continue;
    runtime_->copyAsync(reinterpret_cast<void*>(piece.device + (begin - piece.host)),
                        reinterpret_cast<const void*>(begin), end - begin, out_);
    sentBack_.emplace_back(begin, end);
  }
}

void DeviceStaging::flushPendingOutput() {
  if (pendingEnd_ == pendingBegin_) return;
  sendBack(pendingBegin_, pendingEnd_ - pendingBegin_);
  pendingBegin_ = pendingEnd_ = 0;
}

// Final parts come in small runs (a ring's pieces); neighbouring runs are gathered into copies of
// about LOOM_DEVICE_COPY_BYTES, so a large call makes few copies.
void DeviceStaging::finished(const char* begin, size_t bytes) {
  const auto address = reinterpret_cast<uintptr_t>(begin);
  if (address == pendingEnd_ && pendingEnd_ != pendingBegin_) {
    pendingEnd_ += bytes;
  } else {
    flushPendingOutput();
    pendingBegin_ = address;
    pendingEnd_ = address + bytes;
  }
  if (pendingEnd_ - pendingBegin_ >= pieceBytes_) flushPendingOutput();
}

void DeviceStaging::stageOut(int timeoutMs) {
  awaitInput(timeoutMs);  // in place, the output must not overtake the input's copy
  flushPendingOutput();
  // What went back early is subtracted from the output; the rest goes now.
  std::sort(sentBack_.begin(), sentBack_.end());
  size_t next = 0;
  for (const Piece& piece : outputs_) {
    uintptr_t cursor = piece.host;
    const uintptr_t end = piece.host + piece.bytes;
    while (next < sentBack_.size() && sentBack_[next].second <= cursor) ++next;
    for (size_t k = next; k < sentBack_.size() && sentBack_[k].first < end; ++k) {
      if (sentBack_[k].first > cursor) {
        runtime_->copyAsync(reinterpret_cast<void*>(piece.device + (cursor - piece.host)),
                            reinterpret_cast<const void*>(cursor), sentBack_[k].first - cursor, out_);
      }
      cursor = std::max(cursor, sentBack_[k].second);
    }
    if (cursor < end) {
      runtime_->copyAsync(reinterpret_cast<void*>(piece.device + (cursor - piece.host)),
                          reinterpret_cast<const void*>(cursor), end - cursor, out_);
    }
  }
  runtime_->synchronize(out_, timeoutMs);
}

void DeviceStaging::settle(int timeoutMs) noexcept {
  for (DeviceStream stream : {in_, out_}) {
    if (stream == nullptr) continue;
    try {
      runtime_->synchronize(stream, timeoutMs);
    } catch (...) {  // the device failed: the call's own error is what the caller reports
    }
  }
}

}  // namespace loom
