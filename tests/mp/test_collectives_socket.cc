// SPDX-License-Identifier: Apache-2.0
// The collective matrix of test_collectives_shm over the TCP transport (shared memory disabled),
// all on loopback. Same exact checks; see collective_checks.h for the data and the matrix.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/mp/collective_checks.h"

namespace loom::test {
namespace {

class CollectivesSocket : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("LOOM_TRANSPORT", "socket", 1);
    setenv("LOOM_SHM_DISABLE", "1", 1);
  }
};

TEST_P(CollectivesSocket, FullMatrixIsExactAndIdenticalOnEveryRank) {
  runCollectiveSuite(GetParam(), MatrixOptions{});
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesSocket, ::testing::Values(1, 2, 3, 4, 5, 8));

}  // namespace
}  // namespace loom::test
