// SPDX-License-Identifier: Apache-2.0
// One shared-memory segment, mapped into this process: created by its owner or opened by a
// peer on the same host. The mapping is pre-faulted writable at once because page faults are
// expensive on VMs (~11 us per 4 KiB page) and would otherwise land on the first messages.
//
// Segments have no name in /dev/shm: the creator makes anonymous memory (memfd_create) and
// keeps its descriptor open while peers set up; a peer opens it through
// /proc/<creator pid>/fd/<descriptor>, which the kernel allows only to processes that may
// inspect the creator (same user, ptrace read access: the same reach as a 0600 file). The
// memory lives as long as some process maps it and goes with the last one, so no kill
// timing can leave anything behind and no name can collide with a crashed run's (issue 14,
// finding 4: POSIX names derived from MASTER_ADDR:PORT leaked when ranks died during init,
// and the leftovers broke the next launch at that address). RAII: the destructor unmaps and
// closes the descriptor.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace loom::transport {

// The first bytes of every Loom segment: what it is, which layout, who made it. The pid lets
// peers check later whether the creator is still alive.
struct ShmSegmentHeader {
  uint64_t magic;
  uint32_t version;
  int32_t creatorPid;
  uint64_t totalBytes;
};

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // `name` labels the memory (it shows in /proc/<pid>/maps as /memfd:<name>) and errors;
  // a leading '/' is dropped. Fails with loomSystemError. The memory reads as zeros. Peers
  // open it by this process's pid and fd() until stopSharing().
  static ShmSegment create(const std::string& name, size_t bytes);
  // Maps a segment that process `creatorPid` created and shares as descriptor `creatorFd`,
  // whole; it must be at least `minBytes` long (else loomRemoteError). `name` is for errors.
  static ShmSegment open(pid_t creatorPid, int creatorFd, const std::string& name, size_t minBytes);

  // Closes the descriptor peers open the segment through (the mapping stays valid); call once
  // every peer has mapped it. Idempotent.
  void stopSharing() noexcept;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }  // -1 once no longer shared, and on the opener's side

  // Writes magic, version, this process's pid and the size into the segment's first bytes.
  void stampHeader(uint64_t magic, uint32_t version);
  // Checks magic and version written by the creator; throws loomRemoteError naming `what`.
  const ShmSegmentHeader& checkHeader(uint64_t magic, uint32_t version,
                                      const std::string& what) const;

 private:
  ShmSegment(std::string name, void* data, size_t size, int fd)
      : name_(std::move(name)), data_(data), size_(size), fd_(fd) {}
  void release() noexcept;

  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // created here and still shared with peers
};

}  // namespace loom::transport
