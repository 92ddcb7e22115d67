// SPDX-License-Identifier: Apache-2.0
// Sends this process's stderr (descriptor 2), and that of the children it forks meanwhile, to a
// file until destruction, so a test can look at Loom's log lines (its WARN reports). text()
// reads what was written so far.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace loom::test {

class StderrCapture {
 public:
  StderrCapture() {
    char name[] = "/tmp/loom-stderr-XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp for the stderr capture failed");
    path_ = name;
    std::fflush(stderr);
    saved_ = dup(2);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    unlink(path_.c_str());
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string text() const {
    std::fflush(stderr);
    std::ifstream file(path_);
    std::stringstream contents;
    contents << file.rdbuf();
    return contents.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

}  // namespace loom::test
