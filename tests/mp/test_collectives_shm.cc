// SPDX-License-Identifier: Apache-2.0
// Every collective x datatype x op x in-place/out-of-place, checked exactly, over the shared-
// memory transport with 1..8 processes. Each rank count forks its ranks once and runs the whole
// case matrix inside one communicator (see collective_checks.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/mp/collective_checks.h"

namespace loom::test {
namespace {

class CollectivesShm : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("LOOM_TRANSPORT", "shm", 1);
    unsetenv("LOOM_SHM_DISABLE");
  }
};

TEST_P(CollectivesShm, FullMatrixIsExactAndIdenticalOnEveryRank) {
  runCollectiveSuite(GetParam(), MatrixOptions{});
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesShm, ::testing::Values(1, 2, 3, 4, 5, 8));

}  // namespace
}  // namespace loom::test
