// SPDX-License-Identifier: Apache-2.0
// Reading a configuration file named by the user (LOOM_TOPO_FILE, LOOM_GRAPH_FILE) without
// trusting it: it must be a regular file no larger than a limit, so that /dev/zero, a FIFO or
// a runaway file fails init at once with a message naming it instead of hanging or eating memory.
#pragma once

#include <cstddef>
#include <string>

namespace loom::topology {

// The whole file. `what` names it in messages ("topology file"); every error names `what` and
// `path`: loom::Error(loomInvalidArgument) when it is not a regular file (device, FIFO,
// directory, socket) or holds more than maxBytes, loomSystemError when it cannot be opened or
// read (with errno).
std::string readBoundedFile(const std::string& path, const std::string& what, size_t maxBytes);

}  // namespace loom::topology
