// SPDX-License-Identifier: Apache-2.0
#include "base/net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "base/bootstrap.h"
#include "base/config.h"
#include "base/error.h"

namespace loom::net {

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int64_t Deadline::remainingMs() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  return std::max<int64_t>(left, 0);
}

int Deadline::pollTimeoutMs(int capMs) const {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(at_ - Clock::now()).count();
  if (left <= 0) return 0;
  // Round up so a wait never returns just before the deadline and spins on a 0 ms poll.
  return static_cast<int>(std::min<int64_t>((left + 999) / 1000, capMs));
}

void checkAbort(const std::atomic<bool>* abortFlag, const std::string& who) {
  if (abortFlag != nullptr && abortFlag->load(std::memory_order_relaxed)) {
    throw Error(loomInvalidUsage, who + ": aborted (loomCommAbort)");
  }
}

// ---- Addresses ------------------------------------------------------------------------------

socklen_t addressLength(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool isLoopback(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (address.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

bool isWildcard(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&address)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (address.ss_family == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr);
  }
  return false;
}

uint16_t portOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

void setPort(sockaddr_storage& address, uint16_t port) {
  if (address.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(&address)->sin_port = htons(port);
  }
}

sockaddr_storage loopbackAddress(int family) {
  sockaddr_storage address{};
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&address);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  return address;
}

void putU16(uint8_t* out, uint16_t value) {
  for (int i = 0; i < 2; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
void putU32(uint8_t* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
void putU64(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
uint16_t getU16(const uint8_t* in) { return static_cast<uint16_t>(in[0] | (in[1] << 8)); }
uint32_t getU32(const uint8_t* in) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}
uint64_t getU64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

void encodeWireAddress(const sockaddr_storage& address, uint8_t* out) {
  std::memset(out, 0, kWireAddressBytes);
  if (address.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    putU16(out, 4);
    std::memcpy(out + 2, &in->sin_port, 2);  // already big-endian
    std::memcpy(out + 8, &in->sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    putU16(out, 6);
    std::memcpy(out + 2, &in6->sin6_port, 2);
    putU32(out + 4, in6->sin6_scope_id);
    std::memcpy(out + 8, &in6->sin6_addr, 16);
  }
}

sockaddr_storage decodeWireAddress(const uint8_t* in, const char* what) {
  sockaddr_storage address{};
  const uint16_t family = getU16(in);
  if (family == 4) {
    for (size_t i = 12; i < kWireAddressBytes; ++i) {
      if (in[i] != 0) throwArgument(std::string(what) + ": IPv4 address has stray bytes");
    }
    if (getU32(in + 4) != 0) throwArgument(std::string(what) + ": IPv4 address has a scope id");
    auto* sin = reinterpret_cast<sockaddr_in*>(&address);
    sin->sin_family = AF_INET;
    std::memcpy(&sin->sin_port, in + 2, 2);
    std::memcpy(&sin->sin_addr, in + 8, 4);
  } else if (family == 6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&address);
    sin6->sin6_family = AF_INET6;
    std::memcpy(&sin6->sin6_port, in + 2, 2);
    sin6->sin6_scope_id = getU32(in + 4);
    std::memcpy(&sin6->sin6_addr, in + 8, 16);
  } else if (family == 0) {
    for (size_t i = 2; i < kWireAddressBytes; ++i) {
      if (in[i] != 0) throwArgument(std::string(what) + ": empty address has stray bytes");
    }
  } else {
    throwArgument(std::string(what) + ": unknown address family code " + std::to_string(family));
  }
  return address;
}

// ---- Sockets --------------------------------------------------------------------------------

namespace {

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throwSystem("fcntl(O_NONBLOCK)");
}

constexpr int kSocketBufferBytes = 4 << 20;

long readSysctl(const char* path) {
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) return -1;
  long value = -1;
  if (std::fscanf(file, "%ld", &value) != 1) value = -1;
  std::fclose(file);
  return value;
}

void setLargeBuffers(int fd) {
  // Setting SO_SNDBUF/SO_RCVBUF switches off the kernel's buffer autotuning, and the kernel
  // caps them at net.core.{w,r}mem_max (often ~200 KiB). Only set them when the caps allow the
  // full size; otherwise autotuning (which may grow beyond the cap) does better.
  static const bool allowed = readSysctl("/proc/sys/net/core/wmem_max") >= kSocketBufferBytes &&
                              readSysctl("/proc/sys/net/core/rmem_max") >= kSocketBufferBytes;
  if (!allowed) return;
  // Set before connect/listen so the TCP window scale is negotiated for them.
  int bytes = kSocketBufferBytes;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

Socket newTcpSocket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throwSystem("socket()");
  Socket sock(fd);
  setLargeBuffers(fd);
  return sock;
}

// Waits until fd has `events` or the deadline passes (false); wakes regularly for abortFlag.
bool waitFor(int fd, short events, Deadline deadline, const std::atomic<bool>* abortFlag,
             const std::string& what) {
  for (;;) {
    checkAbort(abortFlag, what);
    // Poll before looking at the deadline so an expired one still gets a last 0 ms look.
    pollfd entry{fd, events, 0};
    int ready = ::poll(&entry, 1, deadline.pollTimeoutMs(kAbortCheckMs));
    if (ready < 0 && errno != EINTR) throwSystem(what + ": poll");
    if (ready > 0) return true;
    if (deadline.expired()) return false;
  }
}

bool retryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH ||
         err == ECONNRESET || err == ECONNABORTED || err == EAGAIN || err == EINTR;
}

// One attempt; returns 0 once connected or the errno that stopped it.
int connectOnce(const sockaddr_storage& address, Deadline deadline,
                const std::atomic<bool>* abortFlag, const std::string& what, Socket& out) {
  Socket sock = newTcpSocket(address.ss_family);
  if (::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&address), addressLength(address)) ==
      0) {
    out = std::move(sock);
    return 0;
  }
  if (errno != EINPROGRESS) return errno;
  if (!waitFor(sock.fd(), POLLOUT, deadline, abortFlag, what)) return ETIMEDOUT;
  int err = 0;
  socklen_t length = sizeof(err);
  if (getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &length) < 0) return errno;
  if (err == 0) out = std::move(sock);
  return err;
}

}  // namespace

Socket openListener(const sockaddr_storage& address) {
  Socket sock = newTcpSocket(address.ss_family);
  int one = 1;
  setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(sock.fd(), reinterpret_cast<const sockaddr*>(&address), addressLength(address)) < 0) {
    throwSystem("bind to " + addressToString(address));
  }
  if (::listen(sock.fd(), SOMAXCONN) < 0) throwSystem("listen on " + addressToString(address));
  return sock;
}

sockaddr_storage boundAddress(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) < 0) {
    throwSystem("getsockname");
  }
  return address;
}

void tuneDataSocket(int fd) {
  // Buffer sizes were set on the socket before connect, or inherited from the listener.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setNonBlocking(fd);
}

namespace {

// The retry loop of both connect functions. `refusedDeadline`: when a refusal arrives after it,
// stop and return nullopt (connectWithRetry passes the overall deadline and never sees that).
std::optional<Socket> connectLoop(const sockaddr_storage& address, Deadline deadline,
                                  Deadline refusedDeadline, bool giveUpWhenRefused,
                                  int64_t timeoutMs, const std::atomic<bool>* abortFlag,
                                  const std::string& what) {
  int backoffMs = 5;
  int lastError = 0;
  for (;;) {
    checkAbort(abortFlag, what);
    Socket sock;
    int err = connectOnce(address, deadline, abortFlag, what, sock);
    if (err == 0) return sock;
    // An attempt cut short by the deadline says less than the refusal before it.
    if (!(err == ETIMEDOUT && deadline.expired() && lastError != 0)) lastError = err;
    if (!retryableConnectError(err)) break;
    if (giveUpWhenRefused && err == ECONNREFUSED && refusedDeadline.expired()) return std::nullopt;
    if (deadline.expired()) break;
    // Exponential backoff: the listener is usually up within milliseconds, but a root that
    // starts late must not be hammered.
    const Deadline nextStop =
        giveUpWhenRefused && err == ECONNREFUSED ? deadline.earlier(refusedDeadline) : deadline;
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<int64_t>(backoffMs, std::max<int64_t>(nextStop.remainingMs(), 1))));
    backoffMs = std::min(backoffMs * 2, 500);
  }
  throw Error(loomSystemError, what + " at " + addressToString(address) +
                                   " failed: " + errnoText(lastError) + " after " +
                                   std::to_string(timeoutMs) + " ms");
}

}  // namespace

Socket connectWithRetry(const sockaddr_storage& address, Deadline deadline, int64_t timeoutMs,
                        const std::atomic<bool>* abortFlag, const std::string& what) {
  return std::move(
      *connectLoop(address, deadline, deadline, false, timeoutMs, abortFlag, what));
}

std::optional<Socket> connectUnlessRefused(const sockaddr_storage& address, Deadline deadline,
                                           int64_t refusedGraceMs, int64_t timeoutMs,
                                           const std::atomic<bool>* abortFlag,
                                           const std::string& what) {
  return connectLoop(address, deadline, Deadline::afterMs(refusedGraceMs), true, timeoutMs,
                     abortFlag, what);
}

void readFully(int fd, void* data, size_t bytes, Deadline deadline,
               const std::atomic<bool>* abortFlag, const std::string& what) {
  auto* cursor = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t got = ::recv(fd, cursor + done, bytes - done, MSG_DONTWAIT);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) throwRemote(what + ": the peer closed the connection");
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) throwRemote(what + ": connection reset by the peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK) throwSystem(what + ": recv");
    if (!waitFor(fd, POLLIN, deadline, abortFlag, what)) {
      throwSystem(what + ": timed out (" + std::to_string(done) + " of " + std::to_string(bytes) +
                      " bytes received)",
                  ETIMEDOUT);
    }
  }
}

void writeFully(int fd, const void* data, size_t bytes, Deadline deadline,
                const std::atomic<bool>* abortFlag, const std::string& what) {
  auto* cursor = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t sent = ::send(fd, cursor + done, bytes - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent >= 0) {
      done += static_cast<size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET)
      throwRemote(what + ": the peer closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK) throwSystem(what + ": send");
    if (!waitFor(fd, POLLOUT, deadline, abortFlag, what)) {
      throwSystem(what + ": timed out (" + std::to_string(done) + " of " + std::to_string(bytes) +
                      " bytes sent)",
                  ETIMEDOUT);
    }
  }
}

// ---- Interface selection --------------------------------------------------------------------

namespace {

// LOOM_SOCKET_IFNAME, parsed like NCCL_SOCKET_IFNAME: "eth,ib" (name prefixes), "^docker,lo"
// (all but these), "=eth0" (exact names), "^=eth0" (all but exactly these).
struct InterfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  explicit InterfaceFilter(const std::string& text) {
    size_t start = 0;
    if (start < text.size() && text[start] == '^') exclude = true, ++start;
    if (start < text.size() && text[start] == '=') exact = true, ++start;
    while (start <= text.size()) {
      size_t end = std::min(text.find(',', start), text.size());
      if (end > start) names.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }
  bool matches(const std::string& name) const {
    bool listed = std::any_of(names.begin(), names.end(), [&](const std::string& entry) {
      return exact ? name == entry : name.compare(0, entry.size(), entry) == 0;
    });
    return listed != exclude;
  }
};

bool isLinkLocal(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 &&
         IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr);
}

// LOOM_SOCKET_FAMILY's family, or AF_UNSPEC (either) when unset.
int requiredFamily() {
  const std::string family = config::choice(config::Knob::SocketFamily);
  return family == "AF_INET" ? AF_INET : family == "AF_INET6" ? AF_INET6 : AF_UNSPEC;
}

sockaddr_storage addressFromFilter(const std::string& spec, int preferredFamily) {
  InterfaceFilter filter(spec);
  const int required = requiredFamily();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) < 0) throwSystem("getifaddrs");
  struct Candidate {
    int rank;  // lower is better
    sockaddr_storage address;
  };
  std::vector<Candidate> candidates;
  std::string seen;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || !(entry->ifa_flags & IFF_UP)) continue;
    int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    std::string name = entry->ifa_name;
    if (seen.find(" " + name + ",") == std::string::npos) seen += " " + name + ",";
    if (!filter.matches(name) || (required != AF_UNSPEC && family != required)) continue;
    Candidate candidate{0, {}};
    std::memcpy(&candidate.address, entry->ifa_addr,
                family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
    // Interfaces keep their getifaddrs order; within it prefer the root's family (or IPv4)
    // and avoid IPv6 link-local addresses, which only work with a scope id.
    candidate.rank = (family == preferredFamily ? 0 : 1) + (isLinkLocal(candidate.address) ? 2 : 0);
    candidates.push_back(candidate);
  }
  freeifaddrs(list);
  if (candidates.empty()) {
    if (!seen.empty()) seen.pop_back();
    std::string wanted = "an IPv4/IPv6 address";
    if (required != AF_UNSPEC) {
      wanted = std::string(required == AF_INET ? "an IPv4 address (" : "an IPv6 address (") +
               config::sourceName(config::Knob::SocketFamily) + "=" + config::choice(config::Knob::SocketFamily) + ")";
    }
    config::badValue(config::Knob::SocketIfname, spec,
                     "matches no interface that is up with " + wanted + " (interfaces:" + seen + ")");
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  sockaddr_storage chosen = candidates.front().address;
  setPort(chosen, 0);
  return chosen;
}

// The local address the kernel would use to reach `root`: connect() on a UDP socket picks a
// route and a source address without sending anything.
sockaddr_storage addressRoutingTo(const sockaddr_storage& root) {
  Socket probe(::socket(root.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) throwSystem("socket(UDP) to find the route to the root");
  if (::connect(probe.fd(), reinterpret_cast<const sockaddr*>(&root), addressLength(root)) < 0) {
    throwSystem("no route to the root at " + addressToString(root));
  }
  sockaddr_storage local = boundAddress(probe.fd());
  setPort(local, 0);
  return local;
}

}  // namespace

// A root's address decides the family where there is one, as NCCL_COMM_ID does in NCCL: the
// route to it does, and ranks must reach each other as they reach it.
sockaddr_storage chooseLocalAddress(const sockaddr_storage* root) {
  if (const std::string spec = config::text(config::Knob::SocketIfname); !spec.empty()) {
    return addressFromFilter(spec, root != nullptr ? root->ss_family : AF_INET);
  }
  if (root == nullptr) return loopbackAddress(requiredFamily() == AF_INET6 ? AF_INET6 : AF_INET);
  if (isLoopback(*root)) return loopbackAddress(root->ss_family);
  return addressRoutingTo(*root);
}

sockaddr_storage chooseLocalAddressForRemotePeers() {
  const std::string spec = config::text(config::Knob::SocketIfname);
  return addressFromFilter(spec.empty() ? "^docker,lo" : spec, AF_INET);
}

}  // namespace loom::net

namespace loom {

std::optional<sockaddr_storage> parseHostPort(const std::string& text, std::string* why) {
  auto fail = [why](const std::string& problem) {
    *why = problem;
    return std::nullopt;
  };
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail("expected [IPv6]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return fail("expected host:port or [IPv6]:port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return fail("write IPv6 addresses as [addr]:port");
    }
  }
  if (host.empty()) return fail("empty host");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return fail("port must be a number in 1-65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return fail("cannot resolve \"" + host + "\": " + gai_strerror(rc));
  }
  sockaddr_storage address{};
  // Prefer IPv4 when a name resolves to both: it is what the other hosts most likely reach.
  const addrinfo* chosen = found;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family == AF_INET) {
      chosen = entry;
      break;
    }
  }
  std::memcpy(&address, chosen->ai_addr, std::min<size_t>(chosen->ai_addrlen, sizeof(address)));
  freeaddrinfo(found);
  if (address.ss_family != AF_INET && address.ss_family != AF_INET6) {
    return fail("not an IPv4 or IPv6 address");
  }
  return address;
}

sockaddr_storage parseHostPort(const std::string& text) {
  std::string why;
  if (std::optional<sockaddr_storage> address = parseHostPort(text, &why)) return *address;
  throwArgument("bad address \"" + text + "\": " + why);
}

std::string addressToString(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    std::string scope = in6->sin6_scope_id ? "%" + std::to_string(in6->sin6_scope_id) : "";
    return "[" + std::string(text) + scope + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "(no address)";
}

}  // namespace loom
