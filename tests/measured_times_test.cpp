// A Runtime's memory of measured shortlists (ops/measured_times.hpp) is bounded: a process that
// meets ever new patterns keeps the newest kMeasuredPatterns, and a pattern measured again
// replaces its times without taking another place.
#include <gtest/gtest.h>

#include <string>

#include "ops/measured_times.hpp"

namespace sparsejit::ops {
namespace {

std::vector<plan::TimedChoice> times(double ms) {
  return {{"csr_rowwarp", {{"warps_per_block", 4}}, ms}, {"cusparse", {}, 2 * ms}};
}

TEST(MeasuredTimes, FindsWhatWasRemembered) {
  MeasuredTimes memo(4);
  EXPECT_FALSE(memo.find("a").has_value());
  memo.remember("a", times(1.5));
  const auto found = memo.find("a");
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].variant, "csr_rowwarp");
  EXPECT_EQ((*found)[0].params.at("warps_per_block"), 4);
  EXPECT_DOUBLE_EQ((*found)[1].ms, 3.0);
}

TEST(MeasuredTimes, RememberingAKeyAgainReplacesItsTimes) {
  MeasuredTimes memo(2);
  memo.remember("a", times(1));
  memo.remember("b", times(2));
  memo.remember("a", times(5));
  EXPECT_EQ(memo.size(), 2u);
  EXPECT_DOUBLE_EQ(memo.find("a")->front().ms, 5.0);
  EXPECT_TRUE(memo.find("b").has_value());
}

TEST(MeasuredTimes, PastCapacityTheFirstRememberedGo) {
  MeasuredTimes memo(3);
  for (int i = 0; i < 10; ++i) memo.remember("pattern" + std::to_string(i), times(i));
  EXPECT_EQ(memo.size(), 3u);
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(memo.find("pattern" + std::to_string(i)).has_value()) << i;
  for (int i = 7; i < 10; ++i) EXPECT_DOUBLE_EQ(memo.find("pattern" + std::to_string(i))->front().ms, i) << i;
}

TEST(MeasuredTimes, ARuntimeKeepsThousandsOfPatterns) {
  MeasuredTimes memo(kMeasuredPatterns);
  for (std::size_t i = 0; i < 3 * kMeasuredPatterns; ++i) memo.remember(std::to_string(i), times(1));
  EXPECT_EQ(memo.size(), kMeasuredPatterns);
  EXPECT_TRUE(memo.find(std::to_string(3 * kMeasuredPatterns - 1)).has_value());
  EXPECT_FALSE(memo.find("0").has_value());
}

}  // namespace
}  // namespace sparsejit::ops
