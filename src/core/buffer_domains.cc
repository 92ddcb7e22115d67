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

// The domain of the `bytes` at `pointer` the call uses, checked against the communicator's
// device and the pointer's mapped range.
MemoryDomain classifyOne(const algo::CallSpec& call, const void* pointer, size_t bytes, const char* what,
                         int device, int rank) {
  MemoryInfo info;
  try {
    info = device::processRuntime().classify(pointer);
  } catch (const Error& error) {
    throw Error(error.code(), callText(call, rank) + ": " + what + ": " + error.what());
  }
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

}  // namespace

void classifyBuffers(algo::CallSpec& call, int device, int rank, int nranks) {
  call.deviceBuffers = 0;
  const algo::BufferExtents extents = algo::bufferExtents(call, rank, nranks);
  if (extents.send > 0 && isDeviceSide(classifyOne(call, call.send, extents.send, "sendbuff", device, rank))) {
    call.deviceBuffers |= algo::CallSpec::kDeviceSend;
  }
  if (extents.recv > 0 && isDeviceSide(classifyOne(call, call.recv, extents.recv, "recvbuff", device, rank))) {
    call.deviceBuffers |= algo::CallSpec::kDeviceRecv;
  }
  if (call.premul.active && call.premul.memory != nullptr &&
      isDeviceSide(classifyOne(call, call.premul.memory, typeSize(call.type), "the PreMulSum scalar", device, rank))) {
    call.deviceBuffers |= algo::CallSpec::kDeviceScalar;
  }
}

}  // namespace loom
