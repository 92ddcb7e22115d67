// SPDX-License-Identifier: Apache-2.0
#include "transport/registry/registry.h"

#include <cstdio>
#include <mutex>

#include "base/error.h"
#include "base/hash.h"
#include "transport/shm/shm_transport.h"
#include "transport/socket/socket_transport.h"

namespace loom::transport {

namespace {

// The built-in transports, most preferred first. A new transport adds its entry here.
std::vector<TransportEntry> builtInTransports() {
  std::vector<TransportEntry> entries;
  entries.push_back(TransportEntry{
      "shm", "shared memory",
      [](const Endpoint& a, const Endpoint& b) { return a.hostHash == b.hostHash; },
      "is on another host",
      [](Bootstrap& bootstrap, const std::vector<int>& peers, const TransportOptions& options) {
        ShmOptions shm;
        shm.slotBytes = options.shmSlotBytes;
        shm.slotCount = options.shmSlots;
        char prefix[64];
        std::snprintf(prefix, sizeof(prefix), "loom-%016llx", static_cast<unsigned long long>(options.commUid));
        shm.namePrefix = prefix;
        shm.timeoutMs = options.timeoutMs;
        return createShmTransport(bootstrap, peers, shm);
      },
      size_t{128} << 10});
  entries.push_back(TransportEntry{
      "socket", "TCP sockets", [](const Endpoint&, const Endpoint&) { return true; }, "cannot be reached",
      [](Bootstrap& bootstrap, const std::vector<int>& peers, const TransportOptions& options) {
        SocketOptions socket;
        socket.socketsPerPeer = options.socketsPerPeer;
        socket.timeoutMs = options.timeoutMs;
        return createSocketTransport(bootstrap, peers, socket);
      },
      // Fewer, larger sends: a socket's cost is per system call.
      size_t{1} << 20});
  return entries;
}

std::mutex registryMutex;
std::shared_ptr<const std::vector<TransportEntry>>& current() {
  static std::shared_ptr<const std::vector<TransportEntry>> entries =
      std::make_shared<const std::vector<TransportEntry>>(builtInTransports());
  return entries;
}

constexpr size_t kMaxEntries = 64;  // TransportPolicy::allowed has a bit per entry

}  // namespace

TransportRegistry registeredTransports() {
  std::lock_guard lock(registryMutex);
  return TransportRegistry(current());
}

void registerTransport(TransportEntry entry, size_t position) {
  std::lock_guard lock(registryMutex);
  auto entries = std::make_shared<std::vector<TransportEntry>>(*current());
  for (const TransportEntry& existing : *entries) {
    if (existing.name == entry.name) throwUsage("transport '" + entry.name + "' is registered already");
  }
  if (entries->size() >= kMaxEntries) throwUsage("at most " + std::to_string(kMaxEntries) + " transports");
  if (!entry.canConnect || !entry.create || entry.name.empty()) {
    throwUsage("transport '" + entry.name + "': an entry needs a name, canConnect and create");
  }
  entries->insert(entries->begin() + static_cast<std::ptrdiff_t>(std::min(position, entries->size())),
                  std::move(entry));
  current() = std::move(entries);
}

void unregisterTransport(const std::string& name) {
  std::lock_guard lock(registryMutex);
  auto entries = std::make_shared<std::vector<TransportEntry>>(*current());
  std::erase_if(*entries, [&](const TransportEntry& entry) { return entry.name == name; });
  current() = std::move(entries);
}

int TransportRegistry::index(const std::string& name) const {
  for (size_t i = 0; i < entries_->size(); ++i) {
    if ((*entries_)[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

uint64_t TransportRegistry::digest() const {
  std::string names;
  for (const TransportEntry& entry : *entries_) names += entry.name + '\n';
  return fnv1a(names.data(), names.size());
}

namespace {

// Two ranks on different hosts, as a network transport must be able to join them.
bool joinsHosts(const TransportEntry& entry) {
  return entry.canConnect(Endpoint{0, 1, 1}, Endpoint{1, 2, 2});
}

}  // namespace

std::vector<std::string> TransportRegistry::networkTransports() const {
  std::vector<std::string> names;
  for (const TransportEntry& entry : *entries_) {
    if (joinsHosts(entry)) names.push_back(entry.name);
  }
  return names;
}

TransportPolicy TransportRegistry::policy(const std::string& forced, bool shmDisabled, const std::string& net) const {
  TransportPolicy policy;
  if (!forced.empty()) {
    const int required = index(forced);
    if (required < 0) throwArgument("no transport called '" + forced + "'");
    policy.required = required;
    policy.allowed = uint64_t{1} << required;
    return policy;
  }
  if (!net.empty() && (index(net) < 0 || !joinsHosts(entry(static_cast<size_t>(index(net)))))) {
    throwArgument("no network transport called '" + net + "'");
  }
  for (size_t i = 0; i < entries_->size(); ++i) {
    const TransportEntry& candidate = (*entries_)[i];
    if (shmDisabled && candidate.name == "shm") continue;
    if (!net.empty() && candidate.name != net && joinsHosts(candidate)) continue;
    policy.allowed |= uint64_t{1} << i;
  }
  return policy;
}

int TransportRegistry::firstJoining(const Endpoint& a, const TransportPolicy& pa, const Endpoint& b,
                                    const TransportPolicy& pb) const {
  for (size_t i = 0; i < entries_->size(); ++i) {
    const bool allowed = (pa.allowed & pb.allowed & (uint64_t{1} << i)) != 0;
    if (allowed && (*entries_)[i].canConnect(a, b)) return static_cast<int>(i);
  }
  return -1;
}

size_t TransportRegistry::choose(const Endpoint& a, const TransportPolicy& pa, const Endpoint& b,
                                 const TransportPolicy& pb, int self) const {
  const int other = a.rank == self ? b.rank : a.rank;
  const std::string who = "rank " + std::to_string(self) + ": ";
  if (pa.required >= 0 && pb.required >= 0 && pa.required != pb.required) {
    throwUsage(who + "LOOM_TRANSPORT=" + entry(self == a.rank ? pa.required : pb.required).name + " but rank " +
               std::to_string(other) + " requires " + entry(self == a.rank ? pb.required : pa.required).name);
  }
  const int chosen = firstJoining(a, pa, b, pb);
  const int required = pa.required >= 0 ? pa.required : pb.required;
  if (required >= 0 && chosen != required) {
    const TransportEntry& wanted = entry(static_cast<size_t>(required));
    const bool bothAllow = (pa.allowed & pb.allowed & (uint64_t{1} << required)) != 0;
    throwUsage(who + "LOOM_TRANSPORT=" + wanted.name + " but rank " + std::to_string(other) + " " +
               (bothAllow ? wanted.unreachable : "disabled " + wanted.description));
  }
  if (chosen < 0) {
    throwUsage(who + "no transport joins rank " + std::to_string(a.rank) + " and rank " + std::to_string(b.rank) +
               " (LOOM_TRANSPORT / LOOM_SHM_DISABLE leave none that can)");
  }
  return static_cast<size_t>(chosen);
}

bool TransportRegistry::joinsEveryPair(const std::string& name, const std::vector<Endpoint>& endpoints,
                                       const std::vector<TransportPolicy>& policies) const {
  const int i = index(name);
  if (i < 0) return false;
  const TransportEntry& candidate = entry(static_cast<size_t>(i));
  for (size_t r = 0; r < endpoints.size(); ++r) {
    if ((policies[r].allowed & (uint64_t{1} << i)) == 0) return false;
    for (size_t s = r + 1; s < endpoints.size(); ++s) {
      if (!candidate.canConnect(endpoints[r], endpoints[s])) return false;
    }
  }
  return true;
}

}  // namespace loom::transport
