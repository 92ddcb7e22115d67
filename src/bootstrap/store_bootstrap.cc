// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/store_bootstrap.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/host_identity.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "base/net/socket.h"
#include "base/rank_ranges.h"

namespace loom {

namespace {

constexpr uint32_t kSecretMagic = 0x4b534d4cu;  // "LMSK"
constexpr size_t kSecretRecordBytes = 8 + sizeof(Secret);  // magic u32 | nranks u32 | secret

// A store wait is cut into slices so that loomCommAbort stops a non-blocking init within one.
constexpr int kGetSliceMs = 1000;
// Up to this many ranks every rank looks up who has arrived (a get that does not wait, per rank
// not seen yet, at each report and at the timeout); above it only rank 0 does, so that a large
// job does not load its store with every rank's look-ups, and the others say how many have
// joined.
constexpr int kProbedRanks = 256;
// The most ranks one report looks up (each is a round trip to the store): the first ones not
// seen yet. The ranks past them are counted from the store's counter of those that joined.
constexpr int kMaxProbes = 64;

class StoreRendezvous {
 public:
  StoreRendezvous(Store& store, const std::string& keyPrefix, int rank, int nranks, const BootstrapOptions& options)
      : store_(store), base_(keyPrefix + "loom/"), rank_(rank), nranks_(nranks), options_(options),
        deadline_(net::Deadline::afterMs(options.timeoutMs)),
        reportMs_(config::integer(config::Knob::InitReportMs)),
        nextReport_(net::Deadline::afterMs(reportMs_)),
        start_(std::chrono::steady_clock::now()),
        seen_(static_cast<size_t>(nranks), false) {
    who_ = (options.commName.empty() ? "" : "[" + options.commName + "] ") + "rank " + std::to_string(rank);
    seen_[static_cast<size_t>(rank)] = true;
  }

  // Refuses a prefix that an earlier communicator used: its records would be read as ours.
  void join() {
    const int64_t joined = store_.add(base_ + "joined", 1);
    if (joined > nranks_) {
      throwUsage(who_ + ": store key prefix '" + prefix() + "' was used by an earlier communicator (" +
                 std::to_string(joined) + " ranks have joined under it, this one has " + std::to_string(nranks_) +
                 "): give every communicator a prefix of its own");
    }
  }

  // A rank's host key is its first: its presence says the rank has arrived (while waiting, the
  // reports and the timeout name who has and who has not).
  void publishHost() {
    std::vector<uint8_t> mine(8);
    net::putU64(mine.data(), loopbackDomainHash());
    store_.set(base_ + "host/" + std::to_string(rank_), mine);
  }

  Secret agreeOnSecret() {
    if (rank_ == 0) {
      const Secret secret = randomSecret();
      std::vector<uint8_t> record(kSecretRecordBytes);
      net::putU32(record.data(), kSecretMagic);
      net::putU32(record.data() + 4, static_cast<uint32_t>(nranks_));
      std::memcpy(record.data() + 8, secret.data(), secret.size());
      store_.set(base_ + "secret", record);
      return secret;
    }
    const std::vector<uint8_t> record = wait("secret", "rank 0's secret", 0);
    if (record.size() != kSecretRecordBytes || net::getU32(record.data()) != kSecretMagic) {
      throwUsage(who_ + ": store key '" + base_ + "secret' holds " + std::to_string(record.size()) +
                 " bytes that are not rank 0's record: the prefix is in use by something else");
    }
    const uint32_t theirs = net::getU32(record.data() + 4);
    if (theirs != static_cast<uint32_t>(nranks_)) {
      throwUsage(who_ + ": rank 0 initialises a communicator of " + std::to_string(theirs) +
                 " ranks under store prefix '" + prefix() + "', this rank one of " + std::to_string(nranks_));
    }
    Secret secret;
    std::memcpy(secret.data(), record.data() + 8, secret.size());
    return secret;
  }

  // Loopback when every rank runs on this host, in this network namespace (two hosts given one
  // LOOM_HOSTID in namespaces of their own cannot meet there); else an interface other hosts
  // can reach.
  sockaddr_storage chooseListenAddress() {
    bool oneHost = true;
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peer == rank_) continue;
      const std::vector<uint8_t> theirs =
          wait("host/" + std::to_string(peer), "rank " + std::to_string(peer) + "'s host", peer);
      seen_[static_cast<size_t>(peer)] = true;
      if (theirs.size() != 8) throwUsage(who_ + ": store key '" + base_ + "host/" + std::to_string(peer) + "' is malformed");
      oneHost = oneHost && net::getU64(theirs.data()) == loopbackDomainHash();
    }
    return oneHost ? net::chooseLocalAddress(nullptr) : net::chooseLocalAddressForRemotePeers();
  }

  std::vector<sockaddr_storage> exchangeAddresses(const sockaddr_storage& advertised) {
    std::vector<uint8_t> mine(sizeof(sockaddr_storage));
    std::memcpy(mine.data(), &advertised, sizeof(advertised));
    store_.set(base_ + "addr/" + std::to_string(rank_), mine);
    std::vector<sockaddr_storage> table(static_cast<size_t>(nranks_));
    table[static_cast<size_t>(rank_)] = advertised;
    for (int peer = 0; peer < nranks_; ++peer) {
      if (peer == rank_) continue;
      const std::vector<uint8_t> theirs =
          wait("addr/" + std::to_string(peer), "rank " + std::to_string(peer) + "'s address", peer);
      if (theirs.size() != sizeof(sockaddr_storage)) {
        throwUsage(who_ + ": store key '" + base_ + "addr/" + std::to_string(peer) + "' is malformed");
      }
      std::memcpy(&table[static_cast<size_t>(peer)], theirs.data(), sizeof(sockaddr_storage));
    }
    return table;
  }

 private:
  std::string prefix() const { return base_.substr(0, base_.size() - 5); }

  // `peer`: the rank that publishes `key`. The reports keep their pace from one key to the next
  // (nextReport_): ranks that come one at a time, each within an interval, are still reported.
  std::vector<uint8_t> wait(const std::string& key, const std::string& what, int peer) {
    for (;;) {
      net::checkAbort(options_.abortFlag, who_ + ": waiting in the store for " + what);
      const int64_t left = deadline_.remainingMs();
      if (left <= 0) {
        const std::string present = arrivals();
        // A rank that arrived (its host key is there) and stopped: its own init failed.
        const std::string hint = seen_[static_cast<size_t>(peer)]
                                     ? "; rank " + std::to_string(peer) + " arrived but went no further: did its "
                                       "init fail (its nranks, or a setting the ranks disagree on)?"
                                     : "; is every rank running, with the same store and key prefix?";
        throwSystem(who_ + ": store rendezvous timed out after " + std::to_string(options_.timeoutMs) +
                        " ms waiting for " + what + " (key '" + base_ + key + "'): " + present + hint,
                    ETIMEDOUT);
      }
      const int64_t slice = std::min<int64_t>({left, kGetSliceMs, std::max<int64_t>(nextReport_.remainingMs(), 1)});
      if (auto value = store_.get(base_ + key, static_cast<int>(slice))) return std::move(*value);
      if (nextReport_.expired()) {
        report(what);
        nextReport_ = net::Deadline::afterMs(reportMs_);
      }
    }
  }

  // Every LOOM_INIT_REPORT_MS of waiting. Rank 0's line is always printed: one per job says
  // who is missing; the others' with LOOM_DEBUG=WARN.
  void report(const std::string& what) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::string line = arrivals();
    if (rank_ == 0) {
      LOOM_WARN_ALWAYS(INIT, "%s: still waiting in the store for %s after %.1f s: %s", who_.c_str(), what.c_str(),
                       waited, line.c_str());
    } else {
      LOOM_WARN(INIT, "%s: still waiting in the store for %s after %.1f s: %s", who_.c_str(), what.c_str(), waited,
                line.c_str());
    }
  }

  // Who has published a host key (arrived) and who has not, looked up without waiting (a get
  // with no time to wait: loomStore_t's get with timeoutMs 0); a rank once seen is not looked
  // up again, and at most kMaxProbes are looked up a time. Above kProbedRanks only rank 0
  // looks: the others count the ranks that have joined.
  std::string arrivals() {
    try {
      return lookUpArrivals();
    } catch (const Error& error) {
      return std::string("(who has arrived is unknown: ") + error.what() + ")";
    }
  }

  std::string lookUpArrivals() {
    if (nranks_ > kProbedRanks && rank_ != 0) {
      return std::to_string(store_.add(base_ + "joined", 0)) + " of " + std::to_string(nranks_) +
             " ranks have joined (rank 0's reports name them)";
    }
    int probes = 0;
    int unknown = 0;  // neither seen nor looked up
    std::vector<int> in, out;
    for (int peer = 0; peer < nranks_; ++peer) {
      if (!seen_[static_cast<size_t>(peer)]) {
        if (probes == kMaxProbes) {
          ++unknown;
          continue;
        }
        ++probes;
        if (!store_.get(base_ + "host/" + std::to_string(peer), 0)) {
          out.push_back(peer);
          continue;
        }
        seen_[static_cast<size_t>(peer)] = true;
      }
      in.push_back(peer);
    }
    if (unknown == 0) return arrivalSummary(seen_);
    // The ranks seen and those looked up in vain are named; the others only counted.
    const int64_t joined = std::max<int64_t>(store_.add(base_ + "joined", 0), static_cast<int64_t>(in.size()));
    return "arrived " + std::to_string(joined) + " of " + std::to_string(nranks_) + " (the store's count); seen: " +
           rankRanges(in) + "; missing: " + rankRanges(out) + "; " + std::to_string(unknown) +
           " more not looked up (at most " + std::to_string(kMaxProbes) + " a report)";
  }

  Store& store_;
  std::string base_;
  int rank_;
  int nranks_;
  BootstrapOptions options_;
  net::Deadline deadline_;
  int64_t reportMs_;
  net::Deadline nextReport_;  // for the whole rendezvous, as the root's server keeps it
  std::chrono::steady_clock::time_point start_;
  std::vector<bool> seen_;  // ranks whose host key this rank has seen
  std::string who_;
};

}  // namespace

std::unique_ptr<Bootstrap> createStoreBootstrap(Store& store, const std::string& keyPrefix, int rank, int nranks,
                                                const BootstrapOptions& options) {
  StoreRendezvous rendezvous(store, keyPrefix, rank, nranks, options);
  rendezvous.join();
  rendezvous.publishHost();
  const Secret secret = rendezvous.agreeOnSecret();
  const sockaddr_storage local = rendezvous.chooseListenAddress();
  LOOM_TRACE(NET, "rank %d: store rendezvous under '%sloom/', listening on %s", rank, keyPrefix.c_str(),
             addressToString(local).c_str());
  return createRingBootstrap(secret, auth::deriveCommUid(secret), local, rank, nranks, options,
                             [&](const sockaddr_storage& advertised, net::Deadline) {
                               return rendezvous.exchangeAddresses(advertised);
                             });
}

}  // namespace loom
