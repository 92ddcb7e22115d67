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
  return fnv1a(id.data(), id.size());
}

uint64_t memoryDomainHash() {
  // A namespace is named by the inode (and device) of its /proc/self/ns link; without that
  // file (no /proc) every rank reads zeros, the same domain, as before namespaces existed.
  struct stat pidNamespace {};
  stat("/proc/self/ns/pid", &pidNamespace);
  const uint64_t words[2] = {static_cast<uint64_t>(pidNamespace.st_dev), static_cast<uint64_t>(pidNamespace.st_ino)};
  return fnv1a(words, sizeof(words), machineHash());
}

}  // namespace loom
