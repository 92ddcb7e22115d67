// SPDX-License-Identifier: Apache-2.0
#include "topology/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/error.h"

namespace loom::topology {

namespace {

class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

std::string readBoundedFile(const std::string& path, const std::string& what, size_t maxBytes) {
  const std::string named = what + " '" + path + "'";
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  OpenFile file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.fd() < 0) throwSystem("cannot open " + named);
  struct stat info {};
  if (::fstat(file.fd(), &info) != 0) throwSystem("cannot stat " + named);
  if (!S_ISREG(info.st_mode)) {
    throwArgument(named + " is not a regular file (it is " + kindOf(info.st_mode) + ")");
  }
  const auto tooLarge = [&](const std::string& size) {
    throwArgument(named + " is " + size + " bytes, over the limit of " + std::to_string(maxBytes) + " bytes");
  };
  if (static_cast<uintmax_t>(info.st_size) > maxBytes) tooLarge(std::to_string(info.st_size));
  // Read up to one byte past the limit: the file may have grown since fstat.
  std::string text(static_cast<size_t>(info.st_size) + 1, '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = ::read(file.fd(), text.data() + done, text.size() - done);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throwSystem("cannot read " + named);
    }
    done += static_cast<size_t>(got);
    if (done > maxBytes) tooLarge("more than " + std::to_string(maxBytes));
    if (done == text.size()) text.resize(std::min(text.size() * 2, maxBytes + 1));
  }
  text.resize(done);
  return text;
}

}  // namespace loom::topology
