// SPDX-License-Identifier: Apache-2.0
#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <utility>

#include "base/error.h"
#include "base/log.h"

namespace loom::transport {

namespace {

// Closes the descriptor on every path; the mapping outlives it.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  void release() { fd_ = -1; }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// Prefers huge pages (fewer faults and TLB misses; ignored when the system disallows them for
// shm), then faults every page in writable. MADV_POPULATE_WRITE does not change the contents,
// so it is safe on memory a peer already uses; on kernels without it, an atomic add of zero
// per page has the same effect.
void prefault(void* data, size_t bytes) {
  (void)madvise(data, bytes, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  if (madvise(data, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* bytesPtr = static_cast<char*>(data);
  for (size_t offset = 0; offset < bytes; offset += page) {
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(bytesPtr + offset))
        .fetch_add(0, std::memory_order_relaxed);
  }
}

void* mapShared(int fd, size_t bytes, const std::string& name) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    throwSystem("shm: mmap of " + name + " (" + std::to_string(bytes) + " bytes)");
  }
  prefault(data, bytes);
  return data;
}

}  // namespace

ShmSegment ShmSegment::create(const std::string& name, size_t bytes) {
  const std::string label = !name.empty() && name[0] == '/' ? name.substr(1) : name;
  int fd = memfd_create(label.c_str(), MFD_CLOEXEC);
  if (fd < 0) throwSystem("shm: creating segment " + label);
  // Until the segment object exists, an error must close the descriptor again.
  FdCloser closer(fd);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    throwSystem("shm: sizing segment " + label + " to " + std::to_string(bytes) + " bytes (is memory short?)");
  }
  void* data = mapShared(fd, bytes, label);
  closer.release();
  LOOM_TRACE(SHM, "created %s (%zu bytes, fd %d)", label.c_str(), bytes, fd);
  return ShmSegment(label, data, bytes, fd);
}

ShmSegment ShmSegment::open(pid_t creatorPid, int creatorFd, const std::string& name, size_t minBytes) {
  const std::string label = !name.empty() && name[0] == '/' ? name.substr(1) : name;
  if (creatorPid <= 0 || creatorFd < 0) {
    throwRemote("shm: segment " + label + " was not created (its creator failed)");
  }
  const std::string path = "/proc/" + std::to_string(creatorPid) + "/fd/" + std::to_string(creatorFd);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    throwSystem("shm: opening peer segment " + label + " through " + path +
                " (the peer is gone, runs as another user, or /proc hides it)");
  }
  FdCloser closer(fd);
  struct stat info {};
  if (fstat(fd, &info) != 0) throwSystem("shm: fstat of " + label);
  if (info.st_size < 0 || static_cast<size_t>(info.st_size) < minBytes) {
    throwRemote("shm: segment " + label + " is " + std::to_string(info.st_size) + " bytes, expected at least " +
                std::to_string(minBytes) + " (not a Loom segment, or its creator failed)");
  }
  const size_t bytes = static_cast<size_t>(info.st_size);
  void* data = mapShared(fd, bytes, label);
  LOOM_TRACE(SHM, "mapped %s (%zu bytes)", label.c_str(), bytes);
  return ShmSegment(label, data, bytes, -1);
}

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void ShmSegment::release() noexcept {
  stopSharing();
  if (data_ != nullptr) {
    munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
}

void ShmSegment::stopSharing() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void ShmSegment::stampHeader(uint64_t magic, uint32_t version) {
  auto* header = static_cast<ShmSegmentHeader*>(data_);
  header->magic = magic;
  header->version = version;
  header->creatorPid = static_cast<int32_t>(getpid());
  header->totalBytes = size_;
}

const ShmSegmentHeader& ShmSegment::checkHeader(uint64_t magic, uint32_t version,
                                                const std::string& what) const {
  const auto* header = static_cast<const ShmSegmentHeader*>(data_);
  if (header->magic != magic) {
    throwRemote("shm: " + name_ + " is not a " + what + " (bad magic)");
  }
  if (header->version != version) {
    throwRemote("shm: " + name_ + " has layout version " + std::to_string(header->version) +
                ", this Loom expects " + std::to_string(version) +
                " (ranks run different Loom builds?)");
  }
  if (header->totalBytes != size_) {
    throwRemote("shm: " + name_ + " header says " + std::to_string(header->totalBytes) +
                " bytes but the segment is " + std::to_string(size_));
  }
  return *header;
}

}  // namespace loom::transport
