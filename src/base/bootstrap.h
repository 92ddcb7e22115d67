// Bootstrap: how the ranks of one communicator find each other and exchange small blobs before
// (and beside) the data transports. The real implementation rendezvous at the root listener
// named in the unique id and then runs a TCP ring among the ranks (src/bootstrap_socket.cc);
// tests may use an in-process implementation (tests/support/thread_bootstrap.h).
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom.h"

namespace loom {

using Secret = std::array<uint8_t, 16>;  // 128-bit shared secret of one communicator

// What the 128-byte loomUniqueId carries (encoded with a magic and version, checked on decode).
struct UniqueIdContents {
  sockaddr_storage rootAddress{};  // the rendezvous listener (IPv4 or IPv6)
  Secret secret{};                 // every connection must prove it knows this
  uint64_t commUid = 0;            // random; names this communicator's shm segments
};

loomUniqueId encodeUniqueId(const UniqueIdContents& contents);
// Throws loom::Error(loomInvalidArgument) with a clear message on a malformed id.
UniqueIdContents decodeUniqueId(const loomUniqueId& id);

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: `data` holds size() blocks of `bytesPerRank`; block rank() is this rank's input;
  // on return every block holds that rank's input. Collective.
  virtual void allGather(void* data, size_t bytesPerRank) = 0;
  virtual void barrier() = 0;
  virtual const Secret& secret() const = 0;
  virtual uint64_t commUid() const = 0;
  // The local address that data-transport listeners should bind to and advertise (chosen by
  // LOOM_SOCKET_IFNAME, or the interface that reaches the root).
  virtual sockaddr_storage localAddress() const = 0;
  // For loomCommShrink, which must reach survivors without the (possibly broken) ring: every
  // rank's bootstrap listener address, by rank, and this rank's listener, kept open for the
  // communicator's life. Empty / -1 where the implementation has none.
  virtual std::vector<sockaddr_storage> listenerAddresses() const { return {}; }
  virtual int listenerFd() const { return -1; }
};

struct BootstrapOptions {
  int timeoutMs = 600000;
  const std::atomic<bool>* abortFlag = nullptr;  // checked while waiting; set by loomCommAbort
  std::string commName;                          // for messages
};

// Rendezvous at the root, authenticate, learn every rank's address, connect the ring.
std::unique_ptr<Bootstrap> createSocketBootstrap(const UniqueIdContents& id, int rank, int nranks,
                                                 const BootstrapOptions& options);

// The root's rendezvous server, run on a background thread of the process that created it.
// It authenticates each rank, collects nranks hellos, answers each with the address table and
// ends. Strangers (bad secret, garbage, stalls) are dropped and logged; they never block it.
// `pinned`: listen on this address (LOOM_COMM_ID) rather than an ephemeral port.
// Returns the unique id that ranks pass to loomCommInitRank.
loomUniqueId startRootServer(const sockaddr_storage* pinned, const Secret* pinnedSecret);

// Parses "host:port" / "[v6]:port" (as in LOOM_COMM_ID). Throws loomInvalidArgument.
sockaddr_storage parseHostPort(const std::string& text);
// The same without throwing: nullopt, and what is wrong in *why, for callers that report the
// text as a variable's value (config::badValue).
std::optional<sockaddr_storage> parseHostPort(const std::string& text, std::string* why);
std::string addressToString(const sockaddr_storage& address);

Secret randomSecret();

}  // namespace loom
