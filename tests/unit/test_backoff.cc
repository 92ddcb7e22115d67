// SPDX-License-Identifier: Apache-2.0
// Backoff (src/base/backoff.h): the phases every waiting loop walks (spin, yield, sleep), the
// yielding round's number the executor paces its clock reads by, rounds spun elsewhere, and
// the yields a caller adds when its clock says the wait is too young to sleep.
#include <gtest/gtest.h>

#include "base/backoff.h"

namespace loom {
namespace {

TEST(Backoff, SpinsThenYieldsThenSleepsWithDoublingSleeps) {
  Backoff backoff(BackoffPolicy{2, 3, 50, 2, 2, 150});
  EXPECT_EQ(backoff.next(), Backoff::Phase::Spin);
  EXPECT_EQ(backoff.yieldRound(), 0);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Spin);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_TRUE(backoff.justStoppedSpinning());
  EXPECT_EQ(backoff.yieldRound(), 1);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_FALSE(backoff.justStoppedSpinning());
  EXPECT_EQ(backoff.yieldRound(), 2);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  EXPECT_EQ(backoff.sleepUs(), 50);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  EXPECT_EQ(backoff.sleepUs(), 100);
  for (int i = 0; i < 10; ++i) backoff.next();
  EXPECT_EQ(backoff.sleepUs(), 150);  // the cap, before the doublings run out
}

TEST(Backoff, YieldingAtOnceCountsYieldRoundsFromTheFirst) {
  Backoff backoff(BackoffPolicy{0, 128, 50, 8, 8, 10000});
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_TRUE(backoff.justStoppedSpinning());
  EXPECT_EQ(backoff.yieldRound(), 1);
  for (int i = 0; i < 7; ++i) backoff.next();
  EXPECT_EQ(backoff.yieldRound(), 8);
}

TEST(Backoff, RoundsSpunElsewhereCountOnlyTowardTheSpinAndResetStartsOver) {
  Backoff backoff(BackoffPolicy{4, 2, 50, 8, 8, 10000});
  backoff.skip(100);  // more than the spin: the yields still all come
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_EQ(backoff.yieldRound(), 1);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  backoff.reset();
  EXPECT_EQ(backoff.next(), Backoff::Phase::Spin);
  EXPECT_EQ(backoff.yieldRound(), 0);
}

TEST(Backoff, YieldMoreRepeatsTheLastYieldRoundsBeforeTheSleeps) {
  Backoff backoff(BackoffPolicy{1, 16, 50, 8, 8, 10000});
  for (int i = 0; i < 17; ++i) backoff.next();
  EXPECT_EQ(backoff.yieldRound(), 16);
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  backoff.yieldMore(8);  // the caller's clock says: not idle long enough to sleep
  for (int round = 9; round <= 16; ++round) {
    EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
    EXPECT_EQ(backoff.yieldRound(), round);  // a pace of one clock read per 8 rounds holds
  }
  EXPECT_EQ(backoff.next(), Backoff::Phase::Sleep);
  EXPECT_EQ(backoff.sleepUs(), 50);  // the sleeps start from the first again
  backoff.yieldMore(100);            // more than the yield phase: never back into the spin
  EXPECT_EQ(backoff.next(), Backoff::Phase::Yield);
  EXPECT_EQ(backoff.yieldRound(), 1);
}

}  // namespace
}  // namespace loom
