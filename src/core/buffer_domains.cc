// SPDX-License-Identifier: Apache-2.0
#include "core/buffer_domains.h"

#include <string>

#include "base/datatype.h"
#include "base/error.h"

namespace loom {

int deviceAtInit() {
  DeviceRuntime& runtime = device::processRuntime();
  return runtime.available() ? runtime.currentDevice() : -1;
}

namespace {

std::string callText(const algo::CallSpec& call, int rank) {
  return "rank " + std::to_string(rank) + ": " + algo::collectiveName(call.collective) + " of " +
         std::to_string(call.count) + " x " + typeName(call.type);
}

MemoryInfo query(const algo::CallSpec& call, const void* pointer, const char* what, int rank) {
  try {
    return device::processRuntime().classify(pointer);
  } catch (const Error& error) {
    throw Error(error.code(), callText(call, rank) + ": " + what + ": " + error.what());
  }
}

// The domain of the `bytes` at `pointer` the call uses (`info`: the pointer's query), checked
// against the communicator's device and the pointer's mapped range.
MemoryDomain checkOne(const algo::CallSpec& call, const MemoryInfo& info, const void* pointer, size_t bytes,
                      const char* what, int device, int rank) {
  if (!isDeviceSide(info.domain)) return info.domain;
  if (info.domain == MemoryDomain::Device && info.device != device) {
    throwArgument(callText(call, rank) + ": " + what + " " + pointerText(pointer) + " is memory of device " +
                  std::to_string(info.device) + ", but this communicator is bound to device " +
                  std::to_string(device) + " (the device current when it was initialised)");
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  if (info.rangeBytes != 0 &&
      (start < info.rangeBase || bytes > info.rangeBytes - (start - info.rangeBase))) {
    throwArgument(callText(call, rank) + ": " + what + " " + pointerText(pointer) + " needs " +
                  std::to_string(bytes) + " bytes, but its " + memoryDomainName(info.domain) + " allocation (" +
                  pointerText(reinterpret_cast<const void*>(info.rangeBase)) + ", " +
                  std::to_string(info.rangeBytes) + " bytes) ends " +
                  std::to_string(info.rangeBase + info.rangeBytes - start) + " bytes after it");
  }
  return info.domain;
}

// Whether the call's recv buffer is its send buffer's memory by one of the in-place forms: the
// same pointer, all-gather's send at rank * sendcount into its recv, or reduce-scatter's recv at
// rank * recvcount into its send. Only these: any other pointer may be another allocation
// (freed, say) even where it lies inside the send buffer's mapped range, so it is asked about.
bool inPlaceForm(const algo::CallSpec& call, int rank) {
  if (call.send == call.recv) return true;
  const size_t offset = static_cast<size_t>(rank) * call.count * typeSize(call.type);
  const auto send = reinterpret_cast<uintptr_t>(call.send), recv = reinterpret_cast<uintptr_t>(call.recv);
  if (call.collective == algo::Collective::AllGather) return send == recv + offset;
  if (call.collective == algo::Collective::ReduceScatter) return recv == send + offset;
  return false;
}

}  // namespace

// One pointer query per buffer of the call: in place, the recv buffer takes the send buffer's
// answer.
void classifyBuffers(algo::CallSpec& call, int device, int rank, int nranks) {
  call.deviceBuffers = 0;
  const algo::BufferExtents extents = algo::bufferExtents(call, rank, nranks);
  MemoryInfo sendInfo;
  const bool sendQueried = extents.send > 0;
  if (sendQueried) {
    sendInfo = query(call, call.send, "sendbuff", rank);
    if (isDeviceSide(checkOne(call, sendInfo, call.send, extents.send, "sendbuff", device, rank))) {
      call.deviceBuffers |= algo::CallSpec::kDeviceSend;
    }
  }
  if (extents.recv > 0) {
    const MemoryInfo recvInfo = sendQueried && inPlaceForm(call, rank)
                                    ? sendInfo
                                    : query(call, call.recv, "recvbuff", rank);
    if (isDeviceSide(checkOne(call, recvInfo, call.recv, extents.recv, "recvbuff", device, rank))) {
      call.deviceBuffers |= algo::CallSpec::kDeviceRecv;
    }
  }
  if (call.premul.active && call.premul.memory != nullptr) {
    const MemoryInfo info = query(call, call.premul.memory, "the PreMulSum scalar", rank);
    if (isDeviceSide(checkOne(call, info, call.premul.memory, typeSize(call.type), "the PreMulSum scalar", device,
                              rank))) {
      call.deviceBuffers |= algo::CallSpec::kDeviceScalar;
    }
  }
}

}  // namespace loom
