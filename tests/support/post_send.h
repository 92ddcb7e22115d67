// SPDX-License-Identifier: Apache-2.0
// Tests post sends of plain host memory: registered with the connection's transport on the
// spot (free for shm and socket, which need no registration, so nothing is undone).
#pragma once

#include <cstddef>

#include "transport/transport.h"

namespace loom::test {

inline void postSend(transport::Connection& connection, const void* data, size_t bytes) {
  const transport::Region region = connection.transport().registerRegion(const_cast<void*>(data), bytes);
  connection.postSend(region, 0, bytes);
}

}  // namespace loom::test
