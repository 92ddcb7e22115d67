// SPDX-License-Identifier: Apache-2.0
#include "tools/loomrun_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace loom::launcher {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A "line" longer than this is emitted in pieces, so a rank printing without newlines cannot
// make the launcher buffer without bound.
constexpr size_t kMaxLine = 64 * 1024;
// Per readiness, so one chatty rank cannot starve the others' pipes (or signal handling).
constexpr int kChunksPerPump = 16;

}  // namespace

void writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // EPIPE, EBADF (stdout closed): nothing useful to do with the text
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
}

TaggedStream::TaggedStream(UniqueFd source, std::string prefix, int destinationFd)
    : source_(std::move(source)), prefix_(std::move(prefix)), destinationFd_(destinationFd) {
  int flags = ::fcntl(source_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(source_.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    throwSystem("loomrun: fcntl O_NONBLOCK");
  }
}

TaggedStream::ReadResult TaggedStream::readChunk() {
  std::array<char, kReadChunk> buffer;
  ssize_t got = ::read(source_.get(), buffer.data(), buffer.size());
  if (got < 0) {
    if (errno == EINTR) return ReadResult::kMore;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadResult::kWouldBlock;
    return ReadResult::kEndOfFile;  // a broken pipe reads as the end of the stream
  }
  if (got == 0) return ReadResult::kEndOfFile;
  pending_.append(buffer.data(), static_cast<size_t>(got));
  emitCompleteLines();
  return ReadResult::kMore;
}

void TaggedStream::pump() {
  if (!open()) return;
  for (int i = 0; i < kChunksPerPump; ++i) {
    ReadResult result = readChunk();
    if (result == ReadResult::kWouldBlock) return;
    if (result == ReadResult::kEndOfFile) {
      finish();
      return;
    }
  }
}

void TaggedStream::drainAndClose() {
  while (open()) {
    ReadResult result = readChunk();
    if (result != ReadResult::kMore) finish();
  }
}

void TaggedStream::emitCompleteLines() {
  size_t start = 0;
  for (size_t newline; (newline = pending_.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    emitLine(std::string_view(pending_).substr(start, newline - start));
  }
  pending_.erase(0, start);
  while (pending_.size() >= kMaxLine) {
    emitLine(std::string_view(pending_).substr(0, kMaxLine));
    pending_.erase(0, kMaxLine);
  }
}

void TaggedStream::emitLine(std::string_view line) {
  // One write per line: lines from different ranks stay whole in loomrun's output.
  std::string tagged;
  tagged.reserve(prefix_.size() + line.size() + 1);
  tagged.append(prefix_).append(line).push_back('\n');
  writeAll(destinationFd_, tagged);
}

void TaggedStream::finish() {
  if (!pending_.empty()) emitLine(pending_);
  pending_.clear();
  source_.reset();
}

}  // namespace loom::launcher
