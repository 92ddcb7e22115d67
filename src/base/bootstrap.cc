// SPDX-License-Identifier: Apache-2.0
#include "base/bootstrap.h"

#include <exception>

#include "base/error.h"

namespace loom {

void agreeOnOutcome(Bootstrap& bootstrap, const char* stage, const std::function<void()>& step) {
  int32_t failed = 0;
  std::exception_ptr error;
  try {
    step();
  } catch (...) {
    failed = 1;
    error = std::current_exception();
  }
  std::vector<int32_t> outcomes(bootstrap.size());
  outcomes[bootstrap.rank()] = failed;
  bootstrap.allGather(outcomes.data(), sizeof(int32_t));
  if (error) std::rethrow_exception(error);
  for (int peer = 0; peer < bootstrap.size(); ++peer) {
    if (outcomes[peer] != 0) {
      throwRemote("rank " + std::to_string(bootstrap.rank()) + ": rank " + std::to_string(peer) +
                  " failed to set up the " + stage + " (its own error says why)");
    }
  }
}

}  // namespace loom
