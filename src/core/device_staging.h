// SPDX-License-Identifier: Apache-2.0
// The memory seam's second half: a call with device buffers (CallSpec::deviceBuffers, set by
// buffer_domains.h) runs on the host path over pinned host copies of them. stageIn lays the
// copies out and returns the call rewritten onto them; the input (its send extent, a device
// PreMulSum scalar) then comes from the device and the output (its recv extent; all-to-all-v's
// blocks only, so the gaps between them keep their device contents) goes back.
//
// The copies overlap the transfer, as NCCL's proxy overlaps its device copies with the network:
// a schedule run by the executor sees this class as its StagedCopies (algorithms/
// staged_copies.h), so the input is copied in pieces of LOOM_DEVICE_COPY_BYTES in the order the
// schedule first touches it, each step starts once its part has arrived, and each part of the
// output goes back once no step is left to write it, on a second stream (a GPU's copy engines
// run both directions at once). A call that reads its whole input at once (the direct engine,
// PreMulSum's premultiply, LOOM_CHECK=2's scan), or LOOM_DEVICE_COPY_BYTES=0, calls awaitInput.
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
// device streams, on its device (the caller makes it current: DeviceGuard), and every wait on
// them is bounded by the call's timeout. Used by the communicator's turn holder only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "algorithms/call_spec.h"
#include "algorithms/staged_copies.h"
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

class DeviceStaging final : public algo::StagedCopies {
 public:
  DeviceStaging() = default;
  ~DeviceStaging() override;
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // Lays out pinned host copies of the device buffers of `calls` (one collective, or a batch of
  // sends and receives) on `device`, the current device, and returns the calls rewritten onto
  // them (valid until the next stageIn). Copies nothing yet. `pieceBytes`: the input's copies'
  // size (LOOM_DEVICE_COPY_BYTES, raised so a call has at most about 1024 pieces; 0: one copy
  // per buffer).
  std::span<const algo::CallSpec> stageIn(std::span<const algo::CallSpec> calls, int device, int rank, int nranks,
                                          size_t pieceBytes);
  // Copies whatever input is not yet on its way and waits for all of it. Throws on a device
  // failure or when the copies do not finish in timeoutMs.
  void awaitInput(int timeoutMs);
  // Copies back what finished() has not, and waits for every copy of the call.
  void stageOut(int timeoutMs);
  // After a failed call: waits a bounded time for copies still in flight, so that none writes
  // into the pinned memory a later call uses. Never throws (the call's error is the one to report).
  void settle(int timeoutMs) noexcept;

  // algo::StagedCopies, for the executor.
  void expect(const char* begin, size_t bytes) override;
  void startInput() override;
  bool arrived(const char* begin, size_t bytes) override;
  void finished(const char* begin, size_t bytes) override;

 private:
  struct Region {  // one contiguous span of device memory, and where its copy lives
    uintptr_t begin, end;
    size_t hostOffset;
  };
  struct Piece {  // a copy between the device and host memory
    uintptr_t host;
    uintptr_t device;
    size_t bytes;
    int order = -1;  // input: its place on the input stream, -1 until queued
  };
  void addRegion(const void* pointer, size_t bytes);
  void layOutRegions();
  void* hostAddress(const void* devicePointer) const;
  void reserveHost(size_t bytes);
  void addInput(const void* device, size_t bytes, size_t pieceBytes);
  void addOutput(const void* device, size_t bytes);
  void queueInput(Piece& piece);
  void sendBack(uintptr_t host, size_t bytes);
  void flushPendingOutput();
  static void mergeOverlapping(std::vector<Piece>& pieces);
  // The pieces of `pieces` (sorted by host address, disjoint) that [begin, end) overlaps.
  static std::pair<size_t, size_t> overlapping(const std::vector<Piece>& pieces, uintptr_t begin, uintptr_t end);

  DeviceRuntime* runtime_ = nullptr;
  int device_ = -1;
  DeviceStream in_ = nullptr, out_ = nullptr;  // device to host, host to device
  char* host_ = nullptr;  // pinned, hostBytes_ of it
  size_t hostBytes_ = 0;
  std::vector<Region> regions_;
  std::vector<Piece> inputs_, outputs_;  // by host address
  std::vector<DeviceEvent> events_;  // events_[k] is recorded after the k-th input copy queued
  size_t queued_ = 0;  // input copies on the stream
  size_t landed_ = 0;  // of them, known to be on the host
  std::vector<std::pair<uintptr_t, uintptr_t>> sentBack_;  // output sent back early, host [begin, end)
  uintptr_t pendingBegin_ = 0, pendingEnd_ = 0;  // final output gathered into one copy
  size_t pieceBytes_ = 0;
  std::vector<algo::CallSpec> staged_;
};

}  // namespace loom
