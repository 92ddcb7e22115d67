// SPDX-License-Identifier: Apache-2.0
// A communicator's links to its peers, made once at init and kept for its life:
//   1. every rank publishes what it is and how it is configured (PeerInfo) in one allGather,
//      and the settings every rank must share are compared;
//   2. the ring order follows the topology (ring_plan.h);
//   3. the transport registry picks one transport per peer (every pair of ranks is connected),
//      each transport some pair uses is created (collectively), and its connections are kept
//      by peer rank;
//   4. where one transport joins every pair of ranks on one host, the direct engine is set up.
// Everything is decided from data every rank sees, so all ranks decide alike. The connector
// names no transport: the registry does (transport/registry/registry.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/direct/direct_engine.h"
#include "base/bootstrap.h"
#include "core/settings.h"
#include "transport/transport.h"

namespace loom {

class Connector {
 public:
  // Collective over `bootstrap`. Resolves settings.pieceBytes when it is 0 (automatic).
  // `callStop` is the communicator's abort flag, which the direct engine's waits poll.
  Connector(Bootstrap& bootstrap, CommSettings& settings, const std::string& commName,
            const std::atomic<bool>* callStop);
  ~Connector();
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  // By peer rank: every other rank (a full mesh); null for this rank itself.
  const std::vector<transport::Connection*>& connections() const { return connections_; }
  // By rank: the same-host peers to check for death while waiting (0: unchecked).
  const std::vector<pid_t>& peerPids() const { return peerPids_; }
  // Ring position -> rank; ring and chain schedules follow it.
  const std::vector<int>& ringOrder() const { return ringOrder_; }
  // The hosts' ranks where the hierarchical schedules run (ring_plan.h, planHierarchy); null
  // where the flat ring does.
  const algo::HostLayout* hosts() const { return hosts_.get(); }
  // More ranks of this communicator on this host than cores to run them: waits should not spin.
  bool oversubscribed() const { return oversubscribed_; }
  // By rank: the host name of a rank on another host, "" for this host's ranks.
  const std::vector<std::string>& peerHosts() const { return peerHosts_; }
  // Null unless every rank shares this host and the direct engine applies.
  algo::DirectEngine* direct() const { return direct_.get(); }
  // After a failed call: every transport tells its peers why, so they fail at once.
  void failAll(int code, const std::string& reason);
  // loomCommAbort: peers that wait on this rank learn it has left (the transports' and the
  // direct engine's departure marks; destruction sets them too). Safe while a call runs.
  void announceDeparture();

 private:
  struct PeerInfo;
  struct Facts;  // what the choice of transports works from, for every rank
  void connect(Bootstrap& bootstrap, const Facts& facts, CommSettings& settings, const std::string& commName);
  void separateHostsThatCannotShareMemory(std::vector<PeerInfo>& peers, const std::string& commName) const;
  // The ranks of this machine whose CPUs overlap this rank's (it included), the CPUs they have
  // between them, and this rank's place among them.
  struct CoreSharing {
    int ranks = 0;
    int cores = 0;
    int index = 0;
  };
  CoreSharing shareCores(const std::vector<PeerInfo>& peers) const;
  void setUpDirect(Bootstrap& bootstrap, const Facts& facts, const std::vector<PeerInfo>& peers,
                   const CommSettings& settings, const std::string& commName, const std::atomic<bool>* callStop);

  int rank_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  std::vector<transport::Connection*> connections_;
  std::vector<pid_t> peerPids_;
  std::vector<int> ringOrder_;
  std::unique_ptr<algo::HostLayout> hosts_;
  std::vector<std::string> peerHosts_;
  bool oversubscribed_ = false;
  std::unique_ptr<algo::DirectEngine> direct_;
};

}  // namespace loom
