// SPDX-License-Identifier: Apache-2.0
#include "base/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <utility>

#include "base/config.h"

#include "base/hash.h"

namespace loom {

namespace {

std::string bootId() {
  std::string id;
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::getline(file, id);
  return id;
}

}  // namespace

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
    identity = hostName() + "/" + bootId();
  }
  return fnv1a(identity.data(), identity.size());
}

uint64_t machineHash() {
  const std::string id = bootId();
  return id.empty() ? hostHash() : fnv1a(id.data(), id.size());
}

namespace {

// A namespace is named by the inode (and device) of its /proc/self/ns link; without that file
// (no /proc) every rank reads zeros, the same namespace, as before namespaces existed.
uint64_t namespaceHash(const char* link, uint64_t seed) {
  struct stat info {};
  stat(link, &info);
  const uint64_t words[2] = {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
  return fnv1a(words, sizeof(words), seed);
}

}  // namespace

uint64_t memoryDomainHash() { return namespaceHash("/proc/self/ns/pid", machineHash()); }

uint64_t loopbackDomainHash() { return namespaceHash("/proc/self/ns/net", hostHash() ^ machineHash()); }

}  // namespace loom
