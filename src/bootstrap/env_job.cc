#include "bootstrap/env_job.h"

#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/hash.h"
#include "base/host_identity.h"
#include "base/log.h"
#include "base/net/auth.h"
#include "bootstrap/socket_bootstrap.h"

namespace loom {

namespace {

const char* get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != 0 ? value : nullptr;
}

int parseNonNegative(const char* name, const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != 0 || value < 0 || value > INT32_MAX) {
    throwArgument(std::string(name) + "=\"" + text + "\" is not a non-negative integer");
  }
  return static_cast<int>(value);
}

Secret parseSecret(const char* text) {
  Secret secret{};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (std::strlen(text) != 32) throwArgument("LOOM_COMM_SECRET must be exactly 32 hex digits");
  for (int i = 0; i < 16; ++i) {
    const int high = nibble(text[2 * i]);
    const int low = nibble(text[2 * i + 1]);
    if (high < 0 || low < 0) {
      throwArgument("LOOM_COMM_SECRET must be exactly 32 hex digits (found '" +
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
  for (const char* name : {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                           "SLURM_JOB_ID", "SLURM_STEP_ID"}) {
    if (const char* value = get(name)) identity += std::string("/") + name + "=" + value;
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

EnvJob readEnvJob() {
  EnvJob job;
  std::string address;
  if (get("LOOM_RANK") || get("LOOM_WORLD_SIZE")) {
    if (!get("LOOM_RANK") || !get("LOOM_WORLD_SIZE") || !get("LOOM_COMM_ID")) {
      throwArgument("loomCommInitFromEnv: LOOM_RANK, LOOM_WORLD_SIZE and LOOM_COMM_ID must all be set (as loomrun does)");
    }
    job.launcher = "loomrun";
    job.rank = parseNonNegative("LOOM_RANK", get("LOOM_RANK"));
    job.nranks = parseNonNegative("LOOM_WORLD_SIZE", get("LOOM_WORLD_SIZE"));
    address = get("LOOM_COMM_ID");
  } else if (get("RANK") && get("WORLD_SIZE") && (get("LOOM_COMM_ID") || (get("MASTER_ADDR") && get("MASTER_PORT")))) {
    job.launcher = "torchrun";
    job.rank = parseNonNegative("RANK", get("RANK"));
    job.nranks = parseNonNegative("WORLD_SIZE", get("WORLD_SIZE"));
    if (get("LOOM_COMM_ID")) {
      address = get("LOOM_COMM_ID");
    } else {
      // torchrun's own store listens on MASTER_PORT; Loom's root takes the next port.
      const int port = parseNonNegative("MASTER_PORT", get("MASTER_PORT")) + 1;
      const std::string host = get("MASTER_ADDR");
      address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    }
  } else if (get("OMPI_COMM_WORLD_RANK") && get("OMPI_COMM_WORLD_SIZE")) {
    job.launcher = "mpirun";
    job.rank = parseNonNegative("OMPI_COMM_WORLD_RANK", get("OMPI_COMM_WORLD_RANK"));
    job.nranks = parseNonNegative("OMPI_COMM_WORLD_SIZE", get("OMPI_COMM_WORLD_SIZE"));
    if (!get("LOOM_COMM_ID")) throwArgument("loomCommInitFromEnv: under mpirun set LOOM_COMM_ID=host:port (the address rank 0 listens on), e.g. mpirun -x LOOM_COMM_ID=node0:29500");
    address = get("LOOM_COMM_ID");
  } else if (get("SLURM_PROCID") && get("SLURM_NTASKS")) {
    job.launcher = "slurm";
    job.rank = parseNonNegative("SLURM_PROCID", get("SLURM_PROCID"));
    job.nranks = parseNonNegative("SLURM_NTASKS", get("SLURM_NTASKS"));
    if (!get("LOOM_COMM_ID")) throwArgument("loomCommInitFromEnv: under Slurm set LOOM_COMM_ID=host:port (the address task 0 listens on)");
    address = get("LOOM_COMM_ID");
  } else {
    throwArgument("loomCommInitFromEnv: no launcher environment found: expected LOOM_RANK/LOOM_WORLD_SIZE/LOOM_COMM_ID (loomrun), "
                  "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun), OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE + LOOM_COMM_ID (mpirun) "
                  "or SLURM_PROCID/SLURM_NTASKS + LOOM_COMM_ID (srun)");
  }
  if (job.nranks < 1 || job.rank >= job.nranks) {
    throwArgument("loomCommInitFromEnv (" + job.launcher + "): rank " + std::to_string(job.rank) +
                  " is not in a world of size " + std::to_string(job.nranks));
  }
  job.rootAddress = parseHostPort(address);
  job.secret = get("LOOM_COMM_SECRET") ? parseSecret(get("LOOM_COMM_SECRET")) : derivedSecret(address);
  return job;
}

UniqueIdContents envUniqueId(const EnvJob& job) {
  UniqueIdContents contents;
  contents.rootAddress = job.rootAddress;
  contents.secret = job.secret;
  contents.commUid = auth::deriveCommUid(job.secret);  // as startRootServer derives it
  return contents;
}

}  // namespace loom
