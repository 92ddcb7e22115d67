// SPDX-License-Identifier: Apache-2.0
// An in-process Bootstrap for tests: the ranks are threads of one process and exchange blobs
// through a shared table. Lets transport and algorithm tests run without sockets.
#pragma once

#include <functional>
#include <memory>

#include "base/bootstrap.h"

namespace loom::test {

class ThreadBootstrapGroup {
 public:
  explicit ThreadBootstrapGroup(int nranks, uint64_t commUid = 0);
  ~ThreadBootstrapGroup();
  // The bootstrap of one rank; each rank's object must be used by one thread only.
  std::unique_ptr<Bootstrap> make(int rank);

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

// Runs body(rank, bootstrap) on nranks threads and joins them; rethrows the first exception.
void runThreadRanks(int nranks, const std::function<void(int rank, Bootstrap& bootstrap)>& body);

}  // namespace loom::test
