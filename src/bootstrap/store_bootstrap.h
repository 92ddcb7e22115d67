// SPDX-License-Identifier: Apache-2.0
// Rendezvous through a key-value store (loomCommInitRankStore): no unique id, no root server,
// no port to agree on. The store carries three small records per communicator, under
// `keyPrefix` + "loom/":
//   joined        a counter every rank bumps once: above nranks, the prefix was used before
//   secret        rank 0's record: magic "LMSK", nranks, the 128-bit secret every connection
//                 proves it knows (the commUid that names shm segments is derived from it)
//   host/<r>      rank r's host identity: when every rank shares a host, the ring listens on
//                 loopback, else on the interface LOOM_SOCKET_IFNAME or NCCL's default picks
//   addr/<r>      rank r's bootstrap listener address
// After that the ranks run the same authenticated TCP ring as a unique-id communicator
// (socket_bootstrap.h), so splits, shrinks and every later allGather work alike.
#pragma once

#include <memory>
#include <string>

#include "base/bootstrap.h"
#include "bootstrap/socket_bootstrap.h"
#include "bootstrap/store.h"

namespace loom {

std::unique_ptr<Bootstrap> createStoreBootstrap(Store& store, const std::string& keyPrefix, int rank, int nranks,
                                                const BootstrapOptions& options);

}  // namespace loom
