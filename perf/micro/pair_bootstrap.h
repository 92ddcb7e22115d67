// SPDX-License-Identifier: Apache-2.0
// The Bootstrap of a two-process communicator whose processes are parent and child of one
// fork: barrier and allGather run over a socketpair. Enough for createShmTransport, which is
// all the microbenchmarks need; no rendezvous server, no TCP, no secret to prove.
#pragma once

#include <sys/socket.h>

#include "base/bootstrap.h"

namespace loom::micro {

class PairBootstrap final : public Bootstrap {
 public:
  // `socket` is this process's end of a connected socketpair; owned (closed) from here on.
  PairBootstrap(int rank, int socket);
  ~PairBootstrap() override;
  PairBootstrap(const PairBootstrap&) = delete;
  PairBootstrap& operator=(const PairBootstrap&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  void allGather(void* data, size_t bytesPerRank) override;
  void barrier() override;
  const Secret& secret() const override { return secret_; }
  uint64_t commUid() const override { return 0; }
  sockaddr_storage localAddress() const override { return {}; }

  // True once the peer process has closed its end (exited or died). Does not block.
  bool peerClosed() const;

 private:
  void sendAll(const void* data, size_t bytes);
  void receiveAll(void* data, size_t bytes);

  int rank_;
  int socket_;
  Secret secret_{};
};

}  // namespace loom::micro
