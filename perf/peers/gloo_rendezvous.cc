// SPDX-License-Identifier: Apache-2.0
#include "perf/peers/gloo_rendezvous.h"

#include <dirent.h>
#include <gloo/transport/tcp/device.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "perf/perf_backend.h"

namespace loom::perf {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

int envInt(const char* name, const char* tool) {
  const char* text = env(name);
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > (1 << 20)) {
    failUsage(tool, std::string(name) + "='" + text + "' is not a rank or size");
  }
  return static_cast<int>(value);
}

// Keeps [A-Za-z0-9.-] of LOOM_COMM_ID ("127.0.0.1:29500" -> "127.0.0.1-29500").
std::string pathSafe(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-';
    out += keep ? c : '-';
  }
  return out;
}

}  // namespace

GlooJob findGlooJob(const char* tool) {
  GlooJob job;
  const char* rankVar = env("LOOM_RANK") ? "LOOM_RANK" : "OMPI_COMM_WORLD_RANK";
  const char* sizeVar = env("LOOM_RANK") ? "LOOM_WORLD_SIZE" : "OMPI_COMM_WORLD_SIZE";
  if (env(rankVar) == nullptr) return job;
  if (env(sizeVar) == nullptr)
    failUsage(tool, std::string(rankVar) + " is set, " + sizeVar + " not");
  job.found = true;
  job.rank = envInt(rankVar, tool);
  job.size = envInt(sizeVar, tool);
  if (job.size < 1 || job.rank >= job.size) {
    failUsage(tool, "rank " + std::to_string(job.rank) + " of " + std::to_string(job.size));
  }
  if (const char* dir = env("LOOM_GLOO_STORE_DIR")) {
    job.storePath = dir;
  } else if (const char* id = env("LOOM_COMM_ID")) {
    const char* tmp = env("TMPDIR") ? env("TMPDIR") : "/tmp";
    job.storePath = std::string(tmp) + "/loom-gloo-" + pathSafe(id) + "-" +
                    std::to_string(static_cast<long>(getppid()));
  } else {
    failUsage(tool,
              "the ranks meet in a gloo FileStore: set LOOM_COMM_ID (loomrun does) or "
              "LOOM_GLOO_STORE_DIR to a directory all ranks share");
  }
  return job;
}

StoreDirectory::StoreDirectory(std::string path, bool owner, const char* tool)
    : path_(std::move(path)), owner_(owner) {
  if (::mkdir(path_.c_str(), 0700) != 0 && errno != EEXIST) {
    failFatally(tool, "cannot create the gloo store " + path_ + ": " + std::strerror(errno));
  }
}

void StoreDirectory::remove() {
  if (!owner_) return;
  owner_ = false;
  // FileStore keeps one flat file per key (and a dot-file while writing it).
  if (DIR* dir = ::opendir(path_.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") ::unlink((path_ + "/" + name).c_str());
    }
    ::closedir(dir);
  }
  ::rmdir(path_.c_str());
}

std::shared_ptr<gloo::transport::Device> createTcpDevice(const char* tool) {
  gloo::transport::tcp::attr attr;
  std::string iface = env("LOOM_SOCKET_IFNAME") ? env("LOOM_SOCKET_IFNAME") : "";
  if (!iface.empty() && iface[0] == '=') iface.erase(0, 1);
  if (!iface.empty() && ::if_nametoindex(iface.c_str()) != 0) {
    attr.iface = iface;
  } else {
    attr.hostname = "127.0.0.1";
  }
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& error) {
    failFatally(tool, std::string("gloo::transport::tcp::CreateDevice failed: ") + error.what());
  }
}

}  // namespace loom::perf
