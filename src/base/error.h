// SPDX-License-Identifier: Apache-2.0
// Errors inside Loom are C++ exceptions carrying a loomResult_t; the C boundary (src/api/)
// catches them, stores the message as the thread's last error and returns the code.
#pragma once

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "loom.h"

namespace loom {

class Error : public std::runtime_error {
 public:
  Error(loomResult_t code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  loomResult_t code() const noexcept { return code_; }

 private:
  loomResult_t code_;
};

// An error whose message already says what happened and who caused it (a peer's own failure
// report, ranks disagreeing on a call): callers add context but need not look for a dead
// peer behind it.
class ExplainedError : public Error {
 public:
  using Error::Error;
};

// "what: strerror(errno) (errno N)" for system call failures.
inline std::string errnoText(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

[[noreturn]] inline void throwSystem(const std::string& what, int err = errno) {
  throw Error(loomSystemError, what + ": " + errnoText(err));
}
[[noreturn]] inline void throwRemote(const std::string& what) { throw Error(loomRemoteError, what); }
[[noreturn]] inline void throwInternal(const std::string& what) {
  throw Error(loomInternalError, what);
}
[[noreturn]] inline void throwArgument(const std::string& what) {
  throw Error(loomInvalidArgument, what);
}
[[noreturn]] inline void throwUsage(const std::string& what) { throw Error(loomInvalidUsage, what); }

}  // namespace loom
