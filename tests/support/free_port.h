// SPDX-License-Identifier: Apache-2.0
// Free loopback ports for tests that pin a root's address.
//
// freePortBelowEphemeralRange: a loopback port that is free now and below the kernel's ephemeral range, for a root pinned
// with LOOM_COMM_ID in tests where the root's port goes away and a rank connects to it again: a
// port from the ephemeral range can meanwhile be handed to any new socket (the connecting
// rank's own listener, or the connecting socket itself, which then talks to itself).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <stdexcept>

namespace loom::test {

// A loopback port the kernel hands out now (ephemeral range): free for a listener bound soon
// after, where nothing connects to it once it has gone away.
inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() for a free port failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  if (!bound) throw std::runtime_error("no free loopback port");
  return ntohs(address.sin_port);
}

// Whether a loopback listener could bind `port` right now.
inline bool loopbackPortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return free;
}

// A loopback port p with p and p + 1 both free now (torchrun's MASTER_PORT convention may use
// either); -1 when none turned up.
inline int freeLoopbackPortPair() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = freeLoopbackPort();
    if (port < 65535 && loopbackPortFree(port) && loopbackPortFree(port + 1)) return port;
  }
  return -1;
}

inline int freePortBelowEphemeralRange() {
  int low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  range >> low;
  const int first = 10000;
  if (low <= first + 100) throw std::runtime_error("the ephemeral port range leaves no room below it");
  std::mt19937 random(static_cast<unsigned>(getpid()) * 2654435761u);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = first + static_cast<int>(random() % static_cast<unsigned>(low - first));
    if (loopbackPortFree(port)) return port;
  }
  throw std::runtime_error("no free port below the ephemeral range");
}

}  // namespace loom::test
