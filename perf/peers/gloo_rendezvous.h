// SPDX-License-Identifier: Apache-2.0
// How the Gloo perf tools' ranks find each other: gloo's FileStore in a directory that every
// rank of one job derives alike, so the tools start exactly like Loom's (`loomrun -n N
// gloo_all_reduce_perf ...`), and a TCP device on loopback.
#pragma once

#include <memory>
#include <string>

namespace gloo::transport {
class Device;
}

namespace loom::perf {

// This process's place in a launched job; found == false without a launcher.
struct GlooJob {
  bool found = false;
  int rank = 0;
  int size = 1;
  std::string storePath;  // the FileStore directory of this job
};

// Reads LOOM_RANK / LOOM_WORLD_SIZE (loomrun; OMPI_COMM_WORLD_RANK / _SIZE under mpirun). The
// store directory is LOOM_GLOO_STORE_DIR when set, otherwise $TMPDIR (or /tmp) /
// loom-gloo-<LOOM_COMM_ID>-<parent pid>: loomrun picks a fresh LOOM_COMM_ID port per job and
// is every rank's parent. On a launched job without either variable, prints why and exits 2.
GlooJob findGlooJob(const char* tool);

// The FileStore directory, created (0700) by every rank. The job's rank 0 (the owner) removes it
// with its key files once every rank has connected: remove() after a barrier, or the destructor.
// A job killed during the rendezvous leaves it behind (a few bytes in $TMPDIR).
class StoreDirectory {
 public:
  StoreDirectory(std::string path, bool owner, const char* tool);
  ~StoreDirectory() { remove(); }
  StoreDirectory(const StoreDirectory&) = delete;
  StoreDirectory& operator=(const StoreDirectory&) = delete;

  const std::string& path() const { return path_; }
  void remove();

 private:
  std::string path_;
  bool owner_;
};

// gloo's TCP transport: LOOM_SOCKET_IFNAME when it names one interface that exists ("lo",
// "=eth0"), else the loopback address 127.0.0.1.
std::shared_ptr<gloo::transport::Device> createTcpDevice(const char* tool);

}  // namespace loom::perf
