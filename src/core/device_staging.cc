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
  if (stream_ != nullptr) runtime_->destroyStream(stream_);
  if (host_ != nullptr) runtime_->freePinnedHost(host_);
}

namespace {
constexpr size_t kHostAlignment = 64;  // a copy keeps its device address's place in a cache line
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

void DeviceStaging::runCopies(const std::vector<Copy>& copies, bool toHost, int timeoutMs) {
  if (copies.empty()) return;
  for (const Copy& copy : copies) {
    void* device = reinterpret_cast<void*>(copy.device);
    void* host = hostAddress(device);
    if (toHost) {
      runtime_->copyAsync(host, device, copy.bytes, stream_);
    } else {
      runtime_->copyAsync(device, host, copy.bytes, stream_);
    }
  }
  runtime_->synchronize(stream_, timeoutMs);
}

std::span<const algo::CallSpec> DeviceStaging::stageIn(std::span<const algo::CallSpec> calls, int device, int rank,
                                                       int nranks, int timeoutMs) {
  if (runtime_ == nullptr) runtime_ = &device::processRuntime();
  const DeviceGuard onDevice(*runtime_, device);
  if (stream_ == nullptr || device_ != device) {
    if (stream_ != nullptr) runtime_->destroyStream(stream_);
    stream_ = nullptr;
    stream_ = runtime_->createStream();
    device_ = device;
  }
  regions_.clear();
  copiesIn_.clear();
  copiesOut_.clear();
  for (const algo::CallSpec& call : calls) {
    const algo::BufferExtents extents = algo::bufferExtents(call, rank, nranks);
    if (call.deviceBuffers & algo::CallSpec::kDeviceSend) {
      addRegion(call.send, extents.send);
      copiesIn_.push_back(Copy{reinterpret_cast<uintptr_t>(call.send), extents.send});
    }
    if (call.deviceBuffers & algo::CallSpec::kDeviceRecv) {
      addRegion(call.recv, extents.recv);
      const auto recv = reinterpret_cast<uintptr_t>(call.recv);
      if (call.collective == algo::Collective::AllToAllv) {
        // Only the blocks the call writes go back: what lies between them stays as it was.
        const size_t element = typeSize(call.type);
        for (size_t peer = 0; peer < call.layout->recvCounts.size(); ++peer) {
          const size_t count = call.layout->recvCounts[peer];
          if (count > 0) copiesOut_.push_back(Copy{recv + call.layout->recvDispls[peer] * element, count * element});
        }
      } else {
        copiesOut_.push_back(Copy{recv, extents.recv});
      }
    }
    if (call.deviceBuffers & algo::CallSpec::kDeviceScalar) {
      addRegion(call.premul.memory, typeSize(call.type));
      copiesIn_.push_back(Copy{reinterpret_cast<uintptr_t>(call.premul.memory), typeSize(call.type)});
    }
  }
  layOutRegions();
  runCopies(copiesIn_, true, timeoutMs);

  staged_.assign(calls.begin(), calls.end());
  for (algo::CallSpec& call : staged_) {
    if (call.deviceBuffers & algo::CallSpec::kDeviceSend) call.send = hostAddress(call.send);
    if (call.deviceBuffers & algo::CallSpec::kDeviceRecv) call.recv = static_cast<void*>(hostAddress(call.recv));
    if (call.deviceBuffers & algo::CallSpec::kDeviceScalar) call.premul.memory = hostAddress(call.premul.memory);
    call.deviceBuffers = 0;
  }
  return staged_;
}

void DeviceStaging::stageOut(int timeoutMs) {
  if (copiesOut_.empty()) return;
  const DeviceGuard onDevice(*runtime_, device_);
  runCopies(copiesOut_, false, timeoutMs);
}

}  // namespace loom
