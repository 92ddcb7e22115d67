// SPDX-License-Identifier: Apache-2.0
#include "tests/support/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace loom::test {

namespace {

thread_local std::string lastError;

loomResult_t fail(const std::string& why) {
  lastError = why + ": " + std::strerror(errno);
  return loomSystemError;
}

// Keys hold '/', which would be directories: each becomes '%'.
std::string pathOf(const std::string& directory, const char* key) {
  std::string name = key;
  for (char& c : name) {
    if (c == '/') c = '%';
  }
  return directory + "/" + name;
}

bool readWhole(const std::string& path, std::vector<char>& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) break;
    out.insert(out.end(), chunk, chunk + n);
  }
  ::close(fd);
  return true;
}

bool writeWhole(const std::string& path, const void* data, size_t bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool written = bytes == 0 || ::write(fd, data, bytes) == static_cast<ssize_t>(bytes);
  ::close(fd);
  return written && ::rename(temporary.c_str(), path.c_str()) == 0;
}

loomResult_t storeSet(void* context, const char* key, const void* value, size_t bytes) {
  const auto* store = static_cast<const FileStore*>(context);
  return writeWhole(pathOf(store->directory(), key), value, bytes) ? loomSuccess : fail("write " + std::string(key));
}

loomResult_t storeGet(void* context, const char* key, void* value, size_t capacity, size_t* length, int timeoutMs) {
  const auto* store = static_cast<const FileStore*>(context);
  const std::string path = pathOf(store->directory(), key);
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  std::vector<char> contents;
  while (!readWhole(path, contents)) {
    if (errno != ENOENT) return fail("read " + std::string(key));
    if (std::chrono::steady_clock::now() >= giveUp) return loomInProgress;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!contents.empty()) std::memcpy(value, contents.data(), std::min(capacity, contents.size()));
  *length = contents.size();
  return loomSuccess;
}

loomResult_t storeAdd(void* context, const char* key, int64_t delta, int64_t* result) {
  const auto* store = static_cast<const FileStore*>(context);
  const std::string lockPath = store->directory() + "/.lock";
  const int lock = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return fail("lock " + lockPath);
  const std::string path = pathOf(store->directory(), key);
  std::vector<char> contents;
  int64_t current = 0;
  if (readWhole(path, contents)) current = std::strtoll(std::string(contents.begin(), contents.end()).c_str(), nullptr, 10);
  current += delta;
  const std::string text = std::to_string(current);
  const bool written = writeWhole(path, text.data(), text.size());
  ::close(lock);  // releases the flock
  if (!written) return fail("write " + std::string(key));
  *result = current;
  return loomSuccess;
}

const char* storeLastError(void*) { return lastError.c_str(); }

}  // namespace

FileStore::FileStore(std::string directory) : directory_(std::move(directory)) {
  callbacks_.size = sizeof(loomStore_t);
  callbacks_.context = this;
  callbacks_.set = storeSet;
  callbacks_.get = storeGet;
  callbacks_.add = storeAdd;
  callbacks_.lastError = storeLastError;
}

StoreDirectory::StoreDirectory(const std::string& testName) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/loom-store-" + testName + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  path_ = buffer.data();
}

StoreDirectory::~StoreDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace loom::test
