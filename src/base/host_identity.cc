#include "base/host_identity.h"

#include <unistd.h>

#include <fstream>
#include <utility>

#include "base/config/config.h"

namespace loom::topology {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t seed) {
  uint64_t hash = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

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

}  // namespace loom::topology
