// SPDX-License-Identifier: Apache-2.0
// Socket plumbing shared by the bootstrap, the root server and the TCP transport: an RAII fd,
// deadlines, non-blocking connect/accept/read/write that never wait past a deadline (and notice
// loomCommAbort), address helpers, a fixed wire encoding of addresses and the choice of the
// local interface (LOOM_SOCKET_IFNAME).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace loom::net {

// Owns one file descriptor; closes it on destruction. Move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();
  // Gives the descriptor up without closing it: the caller owns it now.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A point in time after which a wait gives up.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline afterMs(int64_t ms) {
    return Deadline(Clock::now() + std::chrono::milliseconds(ms));
  }
  bool expired() const { return Clock::now() >= at_; }
  int64_t remainingMs() const;
  // A poll() timeout: the time left, but at most capMs so callers can look at abort flags.
  int pollTimeoutMs(int capMs) const;
  Deadline earlier(const Deadline& other) const { return at_ < other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// How often blocking waits wake up to look at abort flags.
constexpr int kAbortCheckMs = 100;

// Throws loom::Error(loomInvalidUsage, "<who>: aborted ...") when the flag is set (as comm.cc
// reports use of an aborted communicator).
void checkAbort(const std::atomic<bool>* abortFlag, const std::string& who);

// ---- Addresses ------------------------------------------------------------------------------
socklen_t addressLength(const sockaddr_storage& address);
bool isLoopback(const sockaddr_storage& address);
bool isWildcard(const sockaddr_storage& address);
uint16_t portOf(const sockaddr_storage& address);
void setPort(sockaddr_storage& address, uint16_t port);
sockaddr_storage loopbackAddress(int family);

// Fixed 24-byte encoding: family code u16 (0 none, 4, 6), port u16 big-endian, IPv6 scope id
// u32, 16 address bytes (IPv4 in the first 4, the rest zero).
constexpr size_t kWireAddressBytes = 24;
void encodeWireAddress(const sockaddr_storage& address, uint8_t* out);
// Throws loom::Error(loomInvalidArgument) naming `what` on a malformed encoding.
sockaddr_storage decodeWireAddress(const uint8_t* in, const char* what);

// Little-endian integer fields of wire headers.
void putU16(uint8_t* out, uint16_t value);
void putU32(uint8_t* out, uint32_t value);
void putU64(uint8_t* out, uint64_t value);
uint16_t getU16(const uint8_t* in);
uint32_t getU32(const uint8_t* in);
uint64_t getU64(const uint8_t* in);

// ---- Sockets --------------------------------------------------------------------------------
// A non-blocking listener bound to `address` (port 0 = ephemeral) with SO_REUSEADDR. It and
// every socket connectWithRetry makes get 4 MiB send/receive buffers when the kernel's limits
// allow (accepted sockets inherit them).
Socket openListener(const sockaddr_storage& address);
sockaddr_storage boundAddress(int fd);
// TCP_NODELAY and O_NONBLOCK for data sockets.
void tuneDataSocket(int fd);

// Connects, retrying refused/unreachable attempts with backoff until the deadline (the
// listener may not be up yet). The socket is non-blocking. On failure throws
// loom::Error(loomSystemError) "<what> at <addr> failed: <errno text> after <timeoutMs> ms".
Socket connectWithRetry(const sockaddr_storage& address, Deadline deadline, int64_t timeoutMs,
                        const std::atomic<bool>* abortFlag, const std::string& what);
// Like connectWithRetry for a listener that is known to have been up (a root whose uniqueId
// the caller holds): a refusal then means it has closed for good, so refusals are retried only
// for `refusedGraceMs` (a brief refusal, e.g. a full accept queue, must not fail init). Returns
// nullopt once every attempt in that window was refused; other failures throw as above.
std::optional<Socket> connectUnlessRefused(const sockaddr_storage& address, Deadline deadline,
                                           int64_t refusedGraceMs, int64_t timeoutMs,
                                           const std::atomic<bool>* abortFlag,
                                           const std::string& what);

// Exactly `bytes` over a non-blocking socket, polling until the deadline. EOF and resets throw
// loomRemoteError, timeouts loomSystemError (ETIMEDOUT); messages start with `what`.
void readFully(int fd, void* data, size_t bytes, Deadline deadline,
               const std::atomic<bool>* abortFlag, const std::string& what);
void writeFully(int fd, const void* data, size_t bytes, Deadline deadline,
                const std::atomic<bool>* abortFlag, const std::string& what);

// The address this process should listen on. LOOM_SOCKET_IFNAME (prefix list; "^" excludes,
// "=" matches names exactly) picks the interface, of LOOM_SOCKET_FAMILY's family where that is
// set; without it: loopback when the root is on loopback (the root's family) or when there is
// no root (LOOM_SOCKET_FAMILY's, else IPv4), else the address that routes to the root.
sockaddr_storage chooseLocalAddress(const sockaddr_storage* root);
// The same choice with no root to route to, for ranks on several hosts: LOOM_SOCKET_IFNAME, else
// the first interface that is up and not loopback or docker (NCCL's default); of
// LOOM_SOCKET_FAMILY's family where that is set, else IPv4 first.
sockaddr_storage chooseLocalAddressForRemotePeers();

}  // namespace loom::net

namespace loom {

// Parses "host:port" / "[v6]:port" (as in LOOM_COMM_ID). Throws loomInvalidArgument.
sockaddr_storage parseHostPort(const std::string& text);
// The same without throwing: nullopt, and what is wrong in *why, for callers that report the
// text as a variable's value (config::badValue).
std::optional<sockaddr_storage> parseHostPort(const std::string& text, std::string* why);
std::string addressToString(const sockaddr_storage& address);

}  // namespace loom
