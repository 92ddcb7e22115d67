// SPDX-License-Identifier: Apache-2.0
// ncclConfig_t as Loom reads it, and cudaStream_t as Loom honours it.
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "nccl/nccl_shim.h"

namespace loom::nccl {

namespace {

// Whether the caller's struct, `size` bytes long, reaches past `field`: the fields a newer
// nccl.h added are absent from a program built against an older one.
template <class Field>
bool has(const ncclConfig_t* config, size_t offset, const Field&) {
  return config->size >= offset + sizeof(Field);
}
#define LOOM_NCCL_HAS(config, field) has(config, offsetof(ncclConfig_t, field), (config)->field)

std::string hex(unsigned value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%x", value);
  return text;
}

}  // namespace

ncclResult_t toLoomConfig(const ncclConfig_t* config, loomConfig_t* out, const char* function) try {
  *out = LOOM_CONFIG_INITIALIZER;
  if (config->magic != LOOM_NCCL_CONFIG_MAGIC) {
    return refuse(ncclInvalidArgument, function,
                  "ncclConfig_t has a bad magic " + hex(config->magic) +
                      " (not NCCL's): initialise it with NCCL_CONFIG_INITIALIZER");
  }
  // nccl.h 2.14 had size, magic, version and blocking; every later release added fields at
  // the end. A longer struct (a newer nccl.h) is read as far as Loom knows it.
  if (!LOOM_NCCL_HAS(config, blocking)) {
    return refuse(ncclInvalidArgument, function,
                  "ncclConfig_t has size " + std::to_string(config->size) +
                      ", shorter than any nccl.h's: initialise it with NCCL_CONFIG_INITIALIZER");
  }
  out->blocking = config->blocking;
  if (LOOM_NCCL_HAS(config, cgaClusterSize)) out->cgaClusterSize = config->cgaClusterSize;
  if (LOOM_NCCL_HAS(config, minCTAs)) out->minCTAs = config->minCTAs;
  if (LOOM_NCCL_HAS(config, maxCTAs)) out->maxCTAs = config->maxCTAs;
  if (LOOM_NCCL_HAS(config, netName)) out->netName = config->netName;
  if (LOOM_NCCL_HAS(config, splitShare)) out->splitShare = config->splitShare;
  if (LOOM_NCCL_HAS(config, trafficClass)) out->trafficClass = config->trafficClass;
  if (LOOM_NCCL_HAS(config, commName)) out->commName = config->commName;
  if (LOOM_NCCL_HAS(config, collnetEnable)) out->collnetEnable = config->collnetEnable;
  if (LOOM_NCCL_HAS(config, CTAPolicy)) out->CTAPolicy = config->CTAPolicy;
  if (LOOM_NCCL_HAS(config, shrinkShare)) out->shrinkShare = config->shrinkShare;
  if (LOOM_NCCL_HAS(config, nvlsCTAs)) out->nvlsCTAs = config->nvlsCTAs;
  if (LOOM_NCCL_HAS(config, nChannelsPerNetPeer)) out->nChannelsPerNetPeer = config->nChannelsPerNetPeer;
  if (LOOM_NCCL_HAS(config, nvlinkCentricSched)) out->nvlinkCentricSched = config->nvlinkCentricSched;
  return ncclSuccess;
} catch (...) {
  return refuseOutOfMemory(function);  // a message could not be built
}

StreamMode streamMode = StreamMode::Unknown;

ncclResult_t settleStream(cudaStream_t stream, const char* function) {
  try {
    if (streamMode == StreamMode::Unknown) {
      // The runtime is chosen once per process: the first call learns it for all (threads that
      // race here all write the same value).
      streamMode = std::strcmp(loomDeviceRuntime(), "cuda") == 0 ? StreamMode::Cuda : StreamMode::HostOnly;
    }
    if (stream == nullptr && streamMode == StreamMode::HostOnly) return ncclSuccess;
    if (loomDeviceStreamSynchronize(stream) == loomSuccess) return ncclSuccess;
    char pointer[32];
    std::snprintf(pointer, sizeof(pointer), "%p", static_cast<void*>(stream));
    // Loom's message without Loom's function name in front: the caller called `function`.
    std::string why = loomGetLastError(nullptr);
    const std::string prefix = "loomDeviceStreamSynchronize: ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    return refuse(ncclInvalidUsage, function,
                  std::string("cannot wait for stream ") +
                      (stream == nullptr ? "0 (the legacy default stream)" : pointer) + ": " + why);
  } catch (...) {
    return refuseOutOfMemory(function);
  }
}

}  // namespace loom::nccl
