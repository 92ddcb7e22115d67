// SPDX-License-Identifier: Apache-2.0
// --tag-output: copy a rank's stdout or stderr to loomrun's, one "[rank] " prefixed line at a
// time, so that lines of different ranks never interleave mid-line.
#pragma once

#include <string>
#include <string_view>

#include "tools/loomrun_fd.h"

namespace loom::launcher {

// Writes all of `data`; retries short writes and EINTR. A closed reader (EPIPE) drops the
// output rather than stopping the launch: the ranks still need supervising.
void writeAll(int fd, std::string_view data);

class TaggedStream {
 public:
  // `source` is the read end of the rank's pipe; it is made non-blocking here.
  TaggedStream(UniqueFd source, std::string prefix, int destinationFd);

  bool open() const { return source_.valid(); }
  int fd() const { return source_.get(); }

  // Copies what can be read now. At end of file it writes the unfinished last line (ending it
  // with a newline) and closes the pipe.
  void pump();

  // For the end of the launch, when the rank is gone but a background child of it may still
  // hold the pipe: copy what is buffered, write the unfinished line, close without waiting.
  void drainAndClose();

 private:
  enum class ReadResult { kMore, kWouldBlock, kEndOfFile };
  ReadResult readChunk();
  void emitCompleteLines();
  void emitLine(std::string_view line);
  void finish();

  UniqueFd source_;
  std::string prefix_;
  int destinationFd_;
  std::string pending_;  // bytes after the last newline seen
};

}  // namespace loom::launcher
