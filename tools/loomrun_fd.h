// SPDX-License-Identifier: Apache-2.0
// Owned file descriptors for loomrun: every pipe end, signalfd and pidfd closes itself.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "base/error.h"

namespace loom::launcher {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd readEnd;
  UniqueFd writeEnd;
};

// Both ends close-on-exec: a child keeps only what it dup2()s onto 0/1/2, so no rank holds
// another rank's pipe open (which would hide end-of-file from the launcher).
inline Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throwSystem("loomrun: pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace loom::launcher
