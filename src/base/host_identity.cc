// SPDX-License-Identifier: Apache-2.0
#include "base/host_identity.h"

#include <unistd.h>

#include <fstream>
#include <utility>

#include "base/config.h"

#include "base/hash.h"

namespace loom {

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

uint64_t hostHash() {
  std::string identity;
  if (std::string overridden = config::text(config::Knob::HostId); !overridden.empty()) {
    identity = std::move(overridden);
  } else {
    std::string bootId;
    std::ifstream file("/proc/sys/kernel/random/boot_id");
    std::getline(file, bootId);
    identity = hostName() + "/" + bootId;
  }
  return fnv1a(identity.data(), identity.size());
}

}  // namespace loom
