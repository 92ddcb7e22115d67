// SPDX-License-Identifier: Apache-2.0
#include "core/connector.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "algorithms/peer_liveness.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/host_identity.h"
#include "base/log.h"
#include "core/ring_plan.h"
#include "core/spread_ranks.h"
#include "topology/rank_order.h"
#include "transport/registry/registry.h"

namespace loom {

// CPUs 0..1023 (glibc's cpu_set_t), as the bits every rank publishes.
constexpr size_t kCpuWords = sizeof(cpu_set_t) / sizeof(uint64_t);

// What every rank tells the others at init. Plain data, sent as bytes in one allGather.
struct Connector::PeerInfo {
  uint64_t hostHash;
  int32_t pid;
  int32_t requiredTransport;   // registry index LOOM_TRANSPORT forces, or -1
  uint64_t allowedTransports;  // bit i: registry entry i (LOOM_TRANSPORT, LOOM_SHM_DISABLE)
  uint64_t registryDigest;     // every rank must have the same transports in the same order
  uint8_t directAllowed;       // not LOOM_ALGO=ring
  uint8_t crossMemoryAllowed;  // LOOM_CMA=1
  uint8_t algorithm;           // LOOM_ALGO (algo::AlgorithmSetting)
  uint8_t reserved[5];
  uint64_t pieceBytes;  // schedules must agree: every rank cuts messages the same way
  uint64_t directEagerBytes;  // so must the direct collectives
  uint64_t directChunkBytes;
  uint64_t crossMemoryProbe;  // address of a word peers try to read with process_vm_readv
  uint64_t topologyDigest;    // rings from LOOM_TOPO_FILE / LOOM_GRAPH_FILE; 0 without
  uint64_t deterministic;     // LOOM_DETERMINISTIC / config.deterministic: every rank alike
  int32_t package;            // CPU socket and NUMA node this rank runs on (-1 unknown)
  int32_t numaNode;
  uint64_t machine;       // base/host_identity.h: ranks of one machine share its cores
  uint64_t memoryDomain;  // ranks of one host must also share this to share memory
  char hostName[64];      // for errors that name a lost host (truncated, NUL-terminated)
  uint64_t cpus[kCpuWords];  // the CPUs this rank may run on (sched_getaffinity), as bits
};

struct Connector::Facts {
  transport::TransportRegistry registry;
  std::vector<transport::Endpoint> endpoints;   // by rank
  std::vector<transport::TransportPolicy> policies;
};

Connector::Connector(Bootstrap& bootstrap, CommSettings& settings, const std::string& commName,
                     const std::atomic<bool>* callStop)
    : rank_(bootstrap.rank()), connections_(bootstrap.size(), nullptr) {
  const int nranks = bootstrap.size();
  const transport::TransportRegistry registry = transport::registeredTransports();
  const transport::TransportPolicy policy = registry.policy(settings.transport, settings.shmDisabled, settings.netTransport);
  std::vector<PeerInfo> peers(nranks);
  PeerInfo& mine = peers[rank_];
  std::memset(&mine, 0, sizeof(mine));
  mine.hostHash = hostHash();
  mine.machine = machineHash();
  mine.memoryDomain = memoryDomainHash();
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  if (sched_getaffinity(0, sizeof(affinity), &affinity) != 0) CPU_SET(0, &affinity);
  std::memcpy(mine.cpus, &affinity, sizeof(mine.cpus));
  const std::string name = hostName();
  std::memcpy(mine.hostName, name.data(), std::min(name.size(), sizeof(mine.hostName) - 1));
  mine.pid = getpid();
  mine.requiredTransport = policy.required;
  mine.allowedTransports = policy.allowed;
  mine.registryDigest = registry.digest();
  mine.pieceBytes = settings.pieceBytes;
  mine.directAllowed = !settings.directDisabled;
  mine.algorithm = static_cast<uint8_t>(settings.algorithm);
  mine.crossMemoryAllowed = settings.crossMemoryEnabled;
  mine.directEagerBytes = settings.directEagerBytes;
  mine.directChunkBytes = settings.directChunkBytes;
  mine.deterministic = settings.deterministic ? 1 : 0;
  mine.crossMemoryProbe = algo::directProbeAddress();
  const std::unique_ptr<topology::TopologyResult> topology = loadTopology(rank_, commName);
  mine.topologyDigest = topologyDigest(topology.get());
  const topology::RankPlace place = topology::placeThisProcess(mine.hostHash);
  mine.package = place.package;
  mine.numaNode = place.numaNode;
  bootstrap.allGather(peers.data(), sizeof(PeerInfo));

  auto requireSame = [&](const char* variable, uint64_t PeerInfo::*field) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peers[peer].*field != mine.*field) {
        throwUsage("rank " + std::to_string(rank_) + ": " + variable + " is " + std::to_string(mine.*field) +
                   " here but " + std::to_string(peers[peer].*field) + " on rank " + std::to_string(peer) +
                   "; set the same value on every rank");
      }
    }
  };
  requireSame("LOOM_PIECE_BYTES", &PeerInfo::pieceBytes);
  requireSame("LOOM_DIRECT_EAGER_BYTES", &PeerInfo::directEagerBytes);
  requireSame("LOOM_DIRECT_CHUNK_BYTES", &PeerInfo::directChunkBytes);
  requireSame("LOOM_DETERMINISTIC (or config.deterministic)", &PeerInfo::deterministic);
  requireSame("the ring from LOOM_TOPO_FILE/LOOM_GRAPH_FILE (digest)", &PeerInfo::topologyDigest);
  requireSame("the list of registered transports (digest)", &PeerInfo::registryDigest);

  separateHostsThatCannotShareMemory(peers, commName);

  std::vector<topology::RankPlace> places(nranks);
  std::vector<pid_t> pids(nranks);
  std::vector<bool> sameHost(nranks);
  for (int r = 0; r < nranks; ++r) {
    places[r] = topology::RankPlace{peers[r].hostHash, peers[r].package, peers[r].numaNode};
    pids[r] = peers[r].pid;
    sameHost[r] = peers[r].hostHash == mine.hostHash;
    peers[r].hostName[sizeof(peers[r].hostName) - 1] = '\0';  // whatever the peer sent
    peerHosts_.push_back(sameHost[r] ? std::string() : std::string(peers[r].hostName));
  }
  ringOrder_ = planRing(places, topology.get(), commName);
  std::vector<uint64_t> hostIds(nranks);
  std::vector<algo::AlgorithmSetting> algorithms(nranks);
  for (int r = 0; r < nranks; ++r) {
    hostIds[r] = peers[r].hostHash;
    algorithms[r] = static_cast<algo::AlgorithmSetting>(peers[r].algorithm);
  }
  hosts_ = planHierarchy(hostIds, algorithms, settings.deterministic, commName);
  peerPids_ = algo::checkablePeerPids(pids, sameHost, rank_);
  const CoreSharing sharing = shareCores(peers);
  oversubscribed_ = sharing.ranks > sharing.cores;
  if (oversubscribed_) {
    LOOM_INFO(INIT, "comm %s: %d ranks on this machine (%d on this host) share %d cores: waits yield instead of spinning",
              commName.c_str(), sharing.ranks, static_cast<int>(std::count(sameHost.begin(), sameHost.end(), true)),
              sharing.cores);
  }
  Facts facts{registry, {}, {}};
  for (int r = 0; r < nranks; ++r) {
    facts.endpoints.push_back(transport::Endpoint{r, peers[r].hostHash, peers[r].pid});
    facts.policies.push_back(transport::TransportPolicy{peers[r].allowedTransports, peers[r].requiredTransport});
  }
  connect(bootstrap, facts, settings, commName);
  setUpDirect(bootstrap, facts, peers, settings, commName, callStop);
  // Last, after init's waits on peers: a wake-up may move a thread, a spin-wait does not.
  if (oversubscribed_ && settings.spreadRanks) {
    spreadCallingThread(sharing.index);
  }
}

// Ranks that outnumber the cores they share wait by yielding, not spinning. What they share is
// the machine's cores, whatever the hosts: hosts that are containers or namespaces on one node
// (each its own host ID) run on the same cores, and a rank spinning for a peer there holds the
// core that peer needs (3 "hosts" x 1 rank on 2 cores: 20 ms per 8 B all-reduce while
// spinning, 63-157 us yielding). Ranks of one machine whose CPU sets do not overlap (containers
// with cpusets of their own, ranks bound to cores) do not compete, so only overlapping ones
// count, against the CPUs they have between them.
Connector::CoreSharing Connector::shareCores(const std::vector<PeerInfo>& peers) const {
  const PeerInfo& mine = peers[rank_];
  CoreSharing sharing;
  uint64_t joint[kCpuWords] = {};
  for (size_t r = 0; r < peers.size(); ++r) {
    bool overlaps = false;
    for (size_t w = 0; w < kCpuWords; ++w) overlaps = overlaps || (peers[r].cpus[w] & mine.cpus[w]) != 0;
    if (peers[r].machine != mine.machine || !overlaps) continue;
    if (static_cast<int>(r) < rank_) ++sharing.index;
    ++sharing.ranks;
    for (size_t w = 0; w < kCpuWords; ++w) joint[w] |= peers[r].cpus[w];
  }
  for (uint64_t word : joint) sharing.cores += __builtin_popcountll(word);
  return sharing;
}

// Ranks that say they share a host (equal LOOM_HOSTID, or hostname and boot id) but cannot
// share memory, being on different kernels or in different PID namespaces, are told apart: a
// shm connection between them would open the wrong process's descriptors or none. They talk
// over the network instead, and each such rank says so once. Every rank computes the same.
void Connector::separateHostsThatCannotShareMemory(std::vector<PeerInfo>& peers, const std::string& commName) const {
  const PeerInfo& mine = peers[rank_];
  for (size_t r = 0; r < peers.size(); ++r) {
    if (peers[r].hostHash == mine.hostHash && peers[r].memoryDomain != mine.memoryDomain) {
      LOOM_WARN(INIT, "comm %s: rank %d and rank %zu have one host ID but cannot share memory (%s): they use the network "
                "transport; give hosts that are separate machines or PID namespaces different LOOM_HOSTID values",
                commName.c_str(), rank_, r,
                peers[r].machine != mine.machine ? "different machines" : "different PID namespaces");
      break;
    }
  }
  for (PeerInfo& peer : peers) {
    const uint64_t both[2] = {peer.hostHash, peer.memoryDomain};
    peer.hostHash = fnv1a(both, sizeof(both));
  }
}

// Callers share ownership of the communicator, so nothing runs on the links any more.
Connector::~Connector() = default;

void Connector::connect(Bootstrap& bootstrap, const Facts& facts, CommSettings& settings,
                        const std::string& commName) {
  const int nranks = bootstrap.size();
  const transport::TransportRegistry& registry = facts.registry;
  const std::vector<transport::Endpoint>& endpoints = facts.endpoints;
  const std::vector<transport::TransportPolicy>& policies = facts.policies;
  // Ring and chain schedules talk to the two ring neighbours, but point-to-point calls,
  // all-to-all, gather, scatter and the barrier talk to any rank: every pair of ranks is
  // connected at init, as Gloo's full mesh is (n-1 connections per rank; a shm FIFO pair holds
  // 2 x LOOM_SHM_SLOTS x LOOM_SHM_SLOT_BYTES, touched only as it is used).
  std::set<int> neighbours;
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer != rank_) neighbours.insert(peer);
  }
  // The transports some link uses are created (collectively) on every rank: each rank names
  // the ones its own links take, and one exchange ORs them (O(n) per rank, not O(n^2) pairs).
  // The piece size is the largest any ring link prefers. Both come out alike on every rank.
  if (registry.entries().size() > 32) throwInternal("transport registry holds more than 32 transports");
  std::vector<uint32_t> usedBy(nranks, 0);
  for (int peer : neighbours) {
    const int chosen = registry.firstJoining(endpoints[rank_], policies[rank_], endpoints[peer], policies[peer]);
    if (chosen >= 0) usedBy[rank_] |= 1u << chosen;  // else the two ranks of that link report it
  }
  bootstrap.allGather(usedBy.data(), sizeof(uint32_t));
  std::vector<bool> used(registry.entries().size(), false);
  for (uint32_t mask : usedBy) {
    for (size_t i = 0; i < used.size(); ++i) used[i] = used[i] || ((mask >> i) & 1);
  }
  size_t pieceBytes = size_t{128} << 10;
  for (int p = 0; p < nranks && nranks > 1; ++p) {
    const int a = ringOrder_[p], b = ringOrder_[(p + 1) % nranks];
    const int chosen = registry.firstJoining(endpoints[a], policies[a], endpoints[b], policies[b]);
    if (chosen >= 0) pieceBytes = std::max(pieceBytes, registry.entry(chosen).pieceBytes);
  }
  if (settings.pieceBytes == 0) settings.pieceBytes = pieceBytes;

  std::vector<std::vector<int>> peersOf(registry.entries().size());
  for (int peer : neighbours) {
    const size_t chosen = registry.choose(endpoints[rank_], policies[rank_], endpoints[peer], policies[peer], rank_);
    peersOf[chosen].push_back(peer);
  }
  transport::TransportOptions options;
  options.timeoutMs = settings.timeoutMs;
  options.commUid = bootstrap.commUid();
  options.shmSlotBytes = settings.shmSlotBytes;
  options.shmSlots = settings.shmSlots;
  options.socketsPerPeer = settings.socketsPerPeer;
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) continue;
    const transport::TransportEntry& entry = registry.entry(i);
    std::unique_ptr<transport::Transport> created;
    agreeOnOutcome(bootstrap, (entry.name + " transport").c_str(),
                   [&] { created = entry.create(bootstrap, peersOf[i], options); });
    for (int peer : peersOf[i]) connections_[peer] = created->connection(peer);
    transports_.push_back(std::move(created));
  }
  for (int peer : neighbours) {
    LOOM_INFO(INIT, "comm %s: rank %d <-> rank %d over %s", commName.c_str(), rank_, peer, connections_[peer]->kind());
  }
}

// Direct collectives need every rank on this host, their transport allowed everywhere, and
// LOOM_ALGO not forcing schedules. Every rank sees the same PeerInfo, so all decide alike.
void Connector::setUpDirect(Bootstrap& bootstrap, const Facts& facts, const std::vector<PeerInfo>& peers,
                            const CommSettings& settings, const std::string& commName,
                            const std::atomic<bool>* callStop) {
  const int nranks = bootstrap.size();
  if (nranks < 2) return;
  algo::DirectSetup setup;
  bool allowed = true;
  setup.crossMemoryWanted = true;
  for (int r = 0; r < nranks; ++r) {
    allowed = allowed && peers[r].directAllowed;
    setup.crossMemoryWanted = setup.crossMemoryWanted && peers[r].crossMemoryAllowed;
    setup.pids.push_back(peers[r].pid);
    setup.probes.push_back(peers[r].crossMemoryProbe);
  }
  if (!allowed || !facts.registry.joinsEveryPair(algo::kDirectTransport, facts.endpoints, facts.policies)) return;
  setup.rank = rank_;
  setup.settings.eagerBytes = settings.directEagerBytes;
  setup.settings.chunkBytes = settings.directChunkBytes;
  setup.settings.streamBytes = settings.streamCopyBytes;
  setup.settings.checkCalls = settings.checkLevel >= 1;
  setup.settings.deterministic = settings.deterministic;
  setup.commUid = bootstrap.commUid();
  setup.timeoutMs = settings.timeoutMs;
  setup.abortFlag = callStop;
  setup.commName = commName;
  direct_ = algo::createDirectEngine(bootstrap, std::move(setup));
}

void Connector::announceDeparture() {
  if (direct_) direct_->announceDeparture();
  for (auto& transport : transports_) transport->announceDeparture();
}

void Connector::failAll(int code, const std::string& reason) {
  for (auto it = transports_.rbegin(); it != transports_.rend(); ++it) (*it)->failAll(code, reason);
}

}  // namespace loom
