// One POSIX shared-memory segment, mapped into this process: created (O_EXCL, mode 0600) by
// its owner or opened by a peer. The mapping is pre-faulted writable at once because page
// faults are expensive on VMs (~11 us per 4 KiB page) and would otherwise land on the first
// messages. RAII: the destructor unmaps, and removes the name if this object created it and
// nobody removed it yet (so an error during setup leaves nothing in /dev/shm).
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

  // `name` is a POSIX shm name ("/something"). Fails with loomSystemError (EEXIST when a
  // stale segment of that name is left over). The memory reads as zeros.
  static ShmSegment create(const std::string& name, size_t bytes);
  // Maps an existing segment whole; it must be at least `minBytes` long (else loomRemoteError:
  // someone else's file, or a peer that died while creating it).
  static ShmSegment open(const std::string& name, size_t minBytes);

  // Removes the name (the mapping stays valid). Idempotent; a name already removed by the
  // peer (ENOENT) is fine.
  void unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

  // Writes magic, version, this process's pid and the size into the segment's first bytes.
  void stampHeader(uint64_t magic, uint32_t version);
  // Checks magic and version written by the creator; throws loomRemoteError naming `what`.
  const ShmSegmentHeader& checkHeader(uint64_t magic, uint32_t version,
                                      const std::string& what) const;

 private:
  ShmSegment(std::string name, void* data, size_t size, bool ownsName)
      : name_(std::move(name)), data_(data), size_(size), ownsName_(ownsName) {}
  void release() noexcept;

  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool ownsName_ = false;  // created here and not yet unlinked
};

}  // namespace loom::transport
