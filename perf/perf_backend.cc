// SPDX-License-Identifier: Apache-2.0
#include "perf/perf_backend.h"

#include <cstdio>
#include <cstdlib>

namespace loom::perf {

void failFatally(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  std::fflush(nullptr);
  std::_Exit(3);
}

void failUsage(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  std::fflush(nullptr);
  std::_Exit(2);
}

void Backend::notOffered(const char* collective) const {
  failFatally(identity().name.c_str(), std::string(collective) + " is not offered by this backend");
}

void Backend::allReduce(const void*, void*, size_t, loomDataType_t, loomRedOp_t) {
  notOffered("all-reduce");
}
void Backend::allGather(const void*, void*, size_t, loomDataType_t) { notOffered("all-gather"); }
void Backend::reduceScatter(const void*, void*, size_t, loomDataType_t, loomRedOp_t) {
  notOffered("reduce-scatter");
}
void Backend::broadcast(const void*, void*, size_t, loomDataType_t, int) {
  notOffered("broadcast");
}
void Backend::reduce(const void*, void*, size_t, loomDataType_t, loomRedOp_t, int) {
  notOffered("reduce");
}
void Backend::sendRecv(const void*, void*, size_t, loomDataType_t, int, int) {
  notOffered("send/receive");
}
void Backend::allToAll(const void*, void*, size_t, loomDataType_t) { notOffered("all-to-all"); }
void Backend::gather(const void*, void*, size_t, loomDataType_t, int) { notOffered("gather"); }
void Backend::scatter(const void*, void*, size_t, loomDataType_t, int) { notOffered("scatter"); }

}  // namespace loom::perf
