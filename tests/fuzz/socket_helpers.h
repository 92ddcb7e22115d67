// SPDX-License-Identifier: Apache-2.0
// Small socket helpers shared by the fuzz targets that drive Loom's code over real sockets.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/error.h"
#include "base/net/socket.h"

namespace loom::fuzz {

// A connected AF_UNIX stream pair; first is handed to Loom (non-blocking), second is the
// fuzzer's end.
inline std::pair<net::Socket, net::Socket> makeSocketPair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) throwSystem("socketpair");
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return {net::Socket(fds[0]), net::Socket(fds[1])};
}

// Writes what fits without blocking; returns the bytes written (the rest is dropped: a socket
// buffer holds far more than any fuzz input here).
inline size_t sendSome(int fd, const uint8_t* data, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::send(fd, data + done, bytes - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace loom::fuzz
