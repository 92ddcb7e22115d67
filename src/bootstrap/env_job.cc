// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/env_job.h"

#include <atomic>
#include <cstring>
#include <optional>

#include "base/config.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/host_identity.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {

namespace {

using config::Knob;

int rankOrSize(Knob knob) { return static_cast<int>(config::integer(knob)); }

Secret parseSecret(const std::string& text) {
  Secret secret{};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() != 32) config::badValue(Knob::CommSecret, text, "must be exactly 32 hex digits");
  for (size_t i = 0; i < 16; ++i) {
    const int high = nibble(text[2 * i]);
    const int low = nibble(text[2 * i + 1]);
    if (high < 0 || low < 0) {
      // Naming the character (not where it is) helps find the typo without giving the rest away.
      config::badValue(Knob::CommSecret, text,
                       "must be exactly 32 hex digits (found '" +
                           std::string(1, high < 0 ? text[2 * i] : text[2 * i + 1]) + "')");
    }
    secret[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return secret;
}

// Without LOOM_COMM_SECRET the ranks can only agree on values the launcher gave all of them.
// That keeps strangers who don't know the job's identity out, but it is not a secret: say so.
Secret derivedSecret(const std::string& address) {
  std::string identity = "loom-secret/" + address;
  for (Knob knob : {Knob::TorchRunId, Knob::OmpiJobId, Knob::PmixNamespace, Knob::SlurmJobId,
                    Knob::SlurmStepId}) {
    if (config::isSet(knob)) identity += std::string("/") + config::entry(knob).name + "=" + config::text(knob);
  }
  LOOM_WARN(INIT, "LOOM_COMM_SECRET is not set: deriving the communicator secret from the job's identity; set it to keep other local users out");
  Secret secret{};
  const uint64_t low = fnv1a(identity.data(), identity.size());
  const uint64_t high = fnv1a(identity.data(), identity.size(), low ^ 0x9e3779b97f4a7c15ull);
  std::memcpy(secret.data(), &low, 8);
  std::memcpy(secret.data() + 8, &high, 8);
  return secret;
}

}  // namespace

sockaddr_storage commIdAddress(const std::string& text) {
  std::string why;
  if (std::optional<sockaddr_storage> address = parseHostPort(text, &why)) return *address;
  config::badValue(Knob::CommId, text, why);
}

EnvJob readEnvJob() {
  using config::isSet;
  EnvJob job;
  std::string address;
  bool addressFromCommId = true;
  if (isSet(Knob::LoomRank) || isSet(Knob::LoomWorldSize)) {
    if (!isSet(Knob::LoomRank) || !isSet(Knob::LoomWorldSize) || !isSet(Knob::CommId)) {
      throwArgument("LOOM_RANK, LOOM_WORLD_SIZE and LOOM_COMM_ID must all be set (as loomrun does)");
    }
    job.launcher = "loomrun";
    job.rank = rankOrSize(Knob::LoomRank);
    job.nranks = rankOrSize(Knob::LoomWorldSize);
  } else if (isSet(Knob::TorchRank) && isSet(Knob::TorchWorldSize) &&
             (isSet(Knob::CommId) || (isSet(Knob::MasterAddr) && isSet(Knob::MasterPort)))) {
    job.launcher = "torchrun";
    job.rank = rankOrSize(Knob::TorchRank);
    job.nranks = rankOrSize(Knob::TorchWorldSize);
    if (!isSet(Knob::CommId)) {
      // torchrun's own store listens on MASTER_PORT; Loom's root takes the next port.
      const int port = static_cast<int>(config::integer(Knob::MasterPort)) + 1;
      const std::string host = config::text(Knob::MasterAddr);
      address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
      addressFromCommId = false;
    }
  } else if (isSet(Knob::OmpiRank) && isSet(Knob::OmpiSize)) {
    job.launcher = "mpirun";
    job.rank = rankOrSize(Knob::OmpiRank);
    job.nranks = rankOrSize(Knob::OmpiSize);
    if (!isSet(Knob::CommId)) throwArgument("under mpirun set LOOM_COMM_ID=host:port (the address rank 0 listens on), e.g. mpirun -x LOOM_COMM_ID=node0:29500");
  } else if (isSet(Knob::SlurmProcId) && isSet(Knob::SlurmNtasks)) {
    job.launcher = "slurm";
    job.rank = rankOrSize(Knob::SlurmProcId);
    job.nranks = rankOrSize(Knob::SlurmNtasks);
    if (!isSet(Knob::CommId)) throwArgument("under Slurm set LOOM_COMM_ID=host:port (the address task 0 listens on)");
  } else {
    throwArgument("no launcher environment found: expected LOOM_RANK/LOOM_WORLD_SIZE/LOOM_COMM_ID (loomrun), "
                  "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun), OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE + LOOM_COMM_ID (mpirun) "
                  "or SLURM_PROCID/SLURM_NTASKS + LOOM_COMM_ID (srun)");
  }
  if (job.nranks > kMaxRanks) {
    throwArgument("under " + job.launcher + ", a world of size " + std::to_string(job.nranks) +
                  " is too large: Loom serves at most " + std::to_string(kMaxRanks) + " ranks");
  }
  if (job.nranks < 1 || job.rank >= job.nranks) {
    throwArgument("under " + job.launcher + ", rank " + std::to_string(job.rank) +
                  " is not in a world of size " + std::to_string(job.nranks));
  }
  if (addressFromCommId) {
    address = config::text(Knob::CommId);
    job.rootAddress = commIdAddress(address);
  } else {
    // Built from MASTER_ADDR and a checked MASTER_PORT: only the host can be wrong.
    std::string why;
    std::optional<sockaddr_storage> parsed = parseHostPort(address, &why);
    if (!parsed) config::badValue(Knob::MasterAddr, config::text(Knob::MasterAddr), why);
    job.rootAddress = *parsed;
  }
  job.secret = isSet(Knob::CommSecret) ? parseSecret(config::text(Knob::CommSecret)) : derivedSecret(address);
  return job;
}

namespace {

// Every rank of the job makes the same calls in the same order, so the n-th here is the n-th
// on every rank: the generation that tells this communicator's root from the last one's. One
// count for both kinds of id made from a pinned address, which may name the same address.
uint32_t nextGeneration() {
  static std::atomic<uint32_t> made{0};
  return made.fetch_add(1) + 1;
}

}  // namespace

UniqueIdContents rankZeroRootId(const std::string& commId) {
  UniqueIdContents contents;
  contents.rootAddress = commIdAddress(commId);
  contents.secret = config::isSet(Knob::CommSecret) ? parseSecret(config::text(Knob::CommSecret)) : derivedSecret(commId);
  contents.commUid = auth::deriveCommUid(contents.secret);  // as startRootServer derives it
  contents.rootMayStartLate = true;  // rank 0 may come after the others
  contents.rankZeroStartsRoot = true;
  contents.generation = nextGeneration();
  return contents;
}

UniqueIdContents envUniqueId(const EnvJob& job) {
  UniqueIdContents contents;
  contents.rootAddress = job.rootAddress;
  contents.secret = job.secret;
  contents.commUid = auth::deriveCommUid(job.secret);  // as startRootServer derives it
  contents.rootMayStartLate = true;  // the launcher starts every rank at about the same time
  contents.generation = nextGeneration();
  return contents;
}

}  // namespace loom
