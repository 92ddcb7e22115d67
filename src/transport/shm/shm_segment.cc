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
  ~FdCloser() { ::close(fd_); }
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
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      throwSystem("shm: segment " + name +
                  " already exists (left over by a crashed run? remove it from /dev/shm)");
    }
    throwSystem("shm: creating segment " + name);
  }
  FdCloser closer(fd);
  // From here on, an error must remove the name again.
  auto removeName = [&] { shm_unlink(name.c_str()); };
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    removeName();
    throwSystem("shm: sizing segment " + name + " to " + std::to_string(bytes) +
                    " bytes (is /dev/shm full?)",
                err);
  }
  void* data = nullptr;
  try {
    data = mapShared(fd, bytes, name);
  } catch (...) {
    removeName();
    throw;
  }
  LOOM_TRACE(SHM, "created %s (%zu bytes)", name.c_str(), bytes);
  return ShmSegment(name, data, bytes, true);
}

ShmSegment ShmSegment::open(const std::string& name, size_t minBytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throwSystem("shm: opening peer segment " + name);
  FdCloser closer(fd);
  struct stat info {};
  if (fstat(fd, &info) != 0) throwSystem("shm: fstat of " + name);
  if (info.st_size < 0 || static_cast<size_t>(info.st_size) < minBytes) {
    throwRemote("shm: segment " + name + " is " + std::to_string(info.st_size) +
                " bytes, expected at least " + std::to_string(minBytes) +
                " (not a Loom segment, or its creator failed)");
  }
  const size_t bytes = static_cast<size_t>(info.st_size);
  void* data = mapShared(fd, bytes, name);
  LOOM_TRACE(SHM, "mapped %s (%zu bytes)", name.c_str(), bytes);
  return ShmSegment(name, data, bytes, false);
}

ShmSegment::~ShmSegment() { release(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      ownsName_(std::exchange(other.ownsName_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    ownsName_ = std::exchange(other.ownsName_, false);
  }
  return *this;
}

void ShmSegment::release() noexcept {
  if (ownsName_) {
    shm_unlink(name_.c_str());
    ownsName_ = false;
  }
  if (data_ != nullptr) {
    munmap(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
}

void ShmSegment::unlink() {
  if (name_.empty()) return;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
    throwSystem("shm: removing the name " + name_);
  }
  ownsName_ = false;
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
