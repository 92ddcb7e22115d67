// SPDX-License-Identifier: Apache-2.0
// tcp_stream: throughput of TCP over loopback between two endpoints, like iperf: one stream
// (what a TCP transport's single connection can carry), and two streams in opposite directions
// at once, which is the traffic of a 2-rank all-reduce (each rank sends to and receives from
// its peer). Each endpoint is one thread driving its sockets with poll(), as one rank would.
//
//   tcp_stream [--seconds 0.5] [--reps 3] [--chunk-kib 1024] [--sockbuf-kib 4096] [--json]
//
// Large writes, TCP_NODELAY, and big socket buffers (the kernel may cap them: the sizes it
// granted are reported). GB/s are decimal; the figure is the median over repetitions.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "perf/bounds/bounds_support.h"

namespace {

using Clock = std::chrono::steady_clock;
using loom::bounds::kGB;

[[noreturn]] void failSystem(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// Owns one file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {
    if (fd_ < 0) failSystem("socket");
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct SocketSettings {
  int bufferBytes;
  int grantedSend = 0;  // what the kernel reports after setsockopt
  int grantedReceive = 0;
};

void tune(int fd, SocketSettings& settings) {
  const int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) failSystem("TCP_NODELAY");
  for (int option : {SO_SNDBUF, SO_RCVBUF}) {
    if (setsockopt(fd, SOL_SOCKET, option, &settings.bufferBytes, sizeof(int)) != 0) {
      failSystem("SO_SNDBUF/SO_RCVBUF");
    }
  }
  socklen_t length = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &settings.grantedSend, &length);
  length = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &settings.grantedReceive, &length);
}

// A connected pair of loopback sockets: first is the connecting end, second the accepted one.
std::pair<Fd, Fd> connectedPair(SocketSettings& settings) {
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) {
    failSystem("bind");
  }
  if (::listen(listener.get(), 1) != 0) failSystem("listen");
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    failSystem("getsockname");
  }
  Fd client(::socket(AF_INET, SOCK_STREAM, 0));
  tune(client.get(), settings);  // before connect, so the window scale covers the buffer
  if (::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    failSystem("connect");
  }
  Fd server(::accept(listener.get(), nullptr, nullptr));
  tune(server.get(), settings);
  return {std::move(client), std::move(server)};
}

// One endpoint: sends on sendFd until the deadline (then shuts its side down), and receives
// on receiveFd until the peer's end of stream. Either fd may be -1.
struct Endpoint {
  int sendFd = -1;
  int receiveFd = -1;
  double receivedBytes = 0;
  double receiveSeconds = 0;  // from the common start to the end of stream
  std::string error;
};

void drive(Endpoint& endpoint, Clock::time_point start, Clock::time_point deadline,
           std::vector<char>& buffer) {
  bool sending = endpoint.sendFd >= 0;
  bool receiving = endpoint.receiveFd >= 0;
  std::this_thread::sleep_until(start);
  while (sending || receiving) {
    if (sending && Clock::now() >= deadline) {
      ::shutdown(endpoint.sendFd, SHUT_WR);
      sending = false;
      continue;
    }
    pollfd fds[2];
    nfds_t count = 0;
    if (sending) fds[count++] = {endpoint.sendFd, POLLOUT, 0};
    if (receiving) fds[count++] = {endpoint.receiveFd, POLLIN, 0};
    if (::poll(fds, count, 100) < 0 && errno != EINTR) {
      endpoint.error = std::string("poll: ") + std::strerror(errno);
      return;
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == endpoint.sendFd && sending) {
        const ssize_t sent = ::send(fds[i].fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (sent < 0 && errno != EAGAIN && errno != EINTR) {
          endpoint.error = std::string("send: ") + std::strerror(errno);
          return;
        }
      } else if (fds[i].fd == endpoint.receiveFd && receiving) {
        const ssize_t got = ::recv(fds[i].fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (got > 0) {
          endpoint.receivedBytes += double(got);
        } else if (got == 0) {
          endpoint.receiveSeconds = std::chrono::duration<double>(Clock::now() - start).count();
          receiving = false;
        } else if (errno != EAGAIN && errno != EINTR) {
          endpoint.error = std::string("recv: ") + std::strerror(errno);
          return;
        }
      }
    }
  }
}

// Received GB/s per direction for one run: `bidirectional` uses two connections, one per
// direction, each endpoint sending on one and receiving on the other.
std::vector<double> runOnce(bool bidirectional, double seconds, size_t chunk,
                            SocketSettings& settings) {
  auto [forwardA, forwardB] = connectedPair(settings);
  Fd backwardA, backwardB;
  Endpoint a, b;
  a.sendFd = forwardA.get();
  b.receiveFd = forwardB.get();
  if (bidirectional) {
    std::tie(backwardB, backwardA) = connectedPair(settings);
    b.sendFd = backwardB.get();
    a.receiveFd = backwardA.get();
  }
  std::vector<char> bufferA(chunk, 1), bufferB(chunk, 2);  // touched by the fill
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::thread other([&] { drive(b, start, deadline, bufferB); });
  drive(a, start, deadline, bufferA);
  other.join();
  for (const Endpoint* endpoint : {&a, &b}) {
    if (!endpoint->error.empty()) throw std::runtime_error(endpoint->error);
  }
  std::vector<double> rates{b.receivedBytes / b.receiveSeconds / kGB};
  if (bidirectional) rates.push_back(a.receivedBytes / a.receiveSeconds / kGB);
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  const loom::bounds::Arguments args(argc, argv,
                                     "[--seconds S (0.5)] [--reps N (3)] [--chunk-kib KiB (1024)]"
                                     " [--sockbuf-kib KiB (4096)] [--json]");
  const double seconds = args.number("seconds", 0.5, 0.01, 60);
  const int reps = static_cast<int>(args.number("reps", 3, 1, 100));
  const size_t chunk = static_cast<size_t>(args.number("chunk-kib", 1024, 1, 1 << 20)) << 10;
  SocketSettings settings{static_cast<int>(args.number("sockbuf-kib", 4096, 4, 1 << 20)) << 10};
  const bool json = args.flag("json");
  args.rejectUnknown();

  try {
    std::vector<double> one, bothEach, bothTotal;
    for (int r = 0; r < reps; ++r) {
      one.push_back(runOnce(false, seconds, chunk, settings)[0]);
      const std::vector<double> both = runOnce(true, seconds, chunk, settings);
      bothEach.push_back(0.5 * (both[0] + both[1]));
      bothTotal.push_back(both[0] + both[1]);
    }
    const double oneStream = loom::bounds::median(one);
    const double perDirection = loom::bounds::median(bothEach);
    const double total = loom::bounds::median(bothTotal);
    if (json) {
      loom::bounds::JsonLine line;
      line.add("tool", "tcp_stream")
          .add("one_stream_gbps", oneStream)
          .add("two_way_per_direction_gbps", perDirection)
          .add("two_way_total_gbps", total)
          .add("chunk_bytes", double(chunk))
          .add("sndbuf_bytes", settings.grantedSend)
          .add("rcvbuf_bytes", settings.grantedReceive);
      std::printf("%s\n", line.str().c_str());
    } else {
      std::printf(
          "# loopback TCP, %zu KiB writes, TCP_NODELAY, SO_SNDBUF %d B / SO_RCVBUF %d B"
          " granted; median of %d runs of %.2f s\n",
          chunk >> 10, settings.grantedSend, settings.grantedReceive, reps, seconds);
      std::printf("one stream                         %8.2f GB/s\n", oneStream);
      std::printf("two streams, opposite directions   %8.2f GB/s each, %.2f GB/s together\n",
                  perDirection, total);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tcp_stream: %s\n", error.what());
    return 1;
  }
  return 0;
}
