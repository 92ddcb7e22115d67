// SPDX-License-Identifier: Apache-2.0
// The memory seam's second half: a call with device buffers (CallSpec::deviceBuffers, set by
// buffer_domains.h) runs on the host path over pinned host copies of them. stageIn copies what
// the call reads on this rank (its send extent, a device PreMulSum scalar) from the device and
// returns the call rewritten onto the copies; stageOut copies what it wrote (its recv extent;
// all-to-all-v's blocks only, so the gaps between them keep their device contents) back.
//
// Every layer below the core (executor, direct engine, transports, LOOM_CHECK's scans,
// PreMulSum's premultiply) so sees host memory only, and a call's result is the host path's
// result bit for bit, in deterministic mode too, whatever mix of host and device buffers the
// ranks pass. The reduction runs on the host, between the two copies: the data crosses host
// memory anyway on shm and TCP, and a device reduction would add a copy each way per step.
//
// Buffers that overlap (the in-place forms) are staged as one region, so the call sees the same
// in-place relation. The pinned memory is allocated once and kept, growing to the largest call
// (fresh pages cost ~11 us each on this class of VM); copies run on the communicator's own
// device stream, on its device, and every wait on them is bounded by the call's timeout.
// Used by the communicator's turn holder only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/call_spec.h"
#include "base/device_runtime.h"

namespace loom {

// Makes `device` current on the calling thread for its scope and restores the previous one:
// Loom's work for a communicator runs on its device whichever thread does it, and the caller's
// current device is left as it was.
class DeviceGuard {
 public:
  DeviceGuard(DeviceRuntime& runtime, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  DeviceRuntime& runtime_;
  int previous_;
};

class DeviceStaging {
 public:
  DeviceStaging() = default;
  ~DeviceStaging();
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // Copies the device inputs of `calls` (one collective, or a batch of sends and receives) to
  // pinned host memory on `device` and returns the calls rewritten onto it (valid until the
  // next stageIn). Throws on a device failure or when a copy does not finish in timeoutMs.
  std::span<const algo::CallSpec> stageIn(std::span<const algo::CallSpec> calls, int device, int rank, int nranks,
                                          int timeoutMs);
  // Copies the outputs of the calls of the last stageIn back to their device buffers.
  void stageOut(int timeoutMs);

 private:
  struct Region {  // one contiguous span of device memory, and where its copy lives
    uintptr_t begin, end;
    size_t hostOffset;
  };
  struct Copy {  // bytes at a device address
    uintptr_t device;
    size_t bytes;
  };
  void addRegion(const void* pointer, size_t bytes);
  void layOutRegions();
  void* hostAddress(const void* devicePointer) const;
  void reserveHost(size_t bytes);
  void runCopies(const std::vector<Copy>& copies, bool toHost, int timeoutMs);

  DeviceRuntime* runtime_ = nullptr;
  int device_ = -1;
  DeviceStream stream_ = nullptr;
  char* host_ = nullptr;  // pinned, hostBytes_ of it
  size_t hostBytes_ = 0;
  std::vector<Region> regions_;
  std::vector<Copy> copiesIn_, copiesOut_;
  std::vector<algo::CallSpec> staged_;
};

}  // namespace loom
