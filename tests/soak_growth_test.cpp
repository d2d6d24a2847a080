// The soak's memory verdict (tools/cli/soak_memory.cpp) on hand-made series: a warm-up that
// fills caches is not growth, a steady leak is, noise and growth under the limit are not, and
// too few samples after the warm-up are not judged.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "cli/soak.hpp"

namespace sparsejit::cli::soak {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

// One sample a second for `seconds`, RSS given by `mib_at(t)`.
std::vector<MemorySample> series(int seconds, const std::function<double(int)>& mib_at) {
  std::vector<MemorySample> samples;
  for (int t = 0; t <= seconds; ++t) {
    MemorySample s;
    s.seconds = t;
    s.rss_bytes = int64_t(mib_at(t) * double(kMiB));
    samples.push_back(s);
  }
  return samples;
}

Growth rss_growth(const std::vector<MemorySample>& samples, double warmup) {
  return judge_growth(samples, &MemorySample::rss_bytes, warmup, kRssFloorBytes);
}

TEST(SoakGrowth, AWarmUpThatFillsCachesThenNoiseIsSteady) {
  // 100 -> 1000 MiB in the first 20 s (compiles, pools), then ±40 MiB of in-flight operands.
  const auto samples = series(300, [](int t) { return t < 20 ? 100 + 45.0 * t : 1000 + 40 * std::sin(t); });
  const Growth g = rss_growth(samples, 30);
  EXPECT_TRUE(g.judged);
  EXPECT_FALSE(g.grew) << g.final - g.baseline;
  EXPECT_NEAR(g.baseline / double(kMiB), 1000, 40);
  EXPECT_EQ(g.first, 100 * kMiB);
  EXPECT_GE(g.max, 1030 * kMiB);
  EXPECT_DOUBLE_EQ(g.limit, double(kRssFloorBytes));  // 10% of 1000 MiB is under the floor
}

TEST(SoakGrowth, ASteadyLeakGrows) {
  // 1 MiB a second after the warm-up: about 240 MiB between the windows' middles.
  const auto samples = series(300, [](int t) { return 1000.0 + t; });
  const Growth g = rss_growth(samples, 30);
  EXPECT_TRUE(g.judged);
  EXPECT_TRUE(g.grew);
  EXPECT_NEAR((g.final - g.baseline) / double(kMiB), 243, 1);
}

TEST(SoakGrowth, GrowthUnderTheFloorIsNot) {
  const auto samples = series(300, [](int t) { return 1000.0 + t / 3.0; });  // ~80 MiB between the windows
  EXPECT_FALSE(rss_growth(samples, 30).grew);
}

TEST(SoakGrowth, TheLimitIsATenthOfALargeBaseline) {
  const auto by = [](double total_mib) {
    return series(300, [total_mib](int t) { return 4096.0 + (t < 30 ? 0 : total_mib * (t - 30) / 270.0); });
  };
  const Growth within = rss_growth(by(400), 30);  // 360 MiB between the windows; baseline 4116 MiB
  EXPECT_NEAR(within.limit / double(kMiB), 411.6, 0.01);
  EXPECT_FALSE(within.grew);
  EXPECT_TRUE(rss_growth(by(600), 30).grew);
}

TEST(SoakGrowth, CoarseSamplesStillGiveEachWindowItsOuterSample) {
  std::vector<MemorySample> samples(3);
  for (int i = 0; i < 3; ++i) {
    samples[std::size_t(i)].seconds = 50.0 * i;
    samples[std::size_t(i)].rss_bytes = (1000 + 200 * i) * kMiB;
  }
  const Growth g = rss_growth(samples, 10);  // after the warm-up: 50 s and 100 s
  EXPECT_TRUE(g.judged);
  EXPECT_DOUBLE_EQ(g.baseline, double(1200 * kMiB));
  EXPECT_DOUBLE_EQ(g.final, double(1400 * kMiB));
  EXPECT_TRUE(g.grew);
}

TEST(SoakGrowth, UnderTwoSamplesAfterTheWarmUpIsNotJudged) {
  const auto samples = series(10, [](int t) { return 100.0 * t; });
  const Growth g = rss_growth(samples, 10);
  EXPECT_FALSE(g.judged);
  EXPECT_FALSE(g.grew);
  EXPECT_EQ(g.last, 1000 * kMiB);
  EXPECT_EQ(g.max, 1000 * kMiB);
  EXPECT_FALSE(judge_growth({}, &MemorySample::device_bytes, 0, kDeviceFloorBytes).judged);
}

TEST(SoakGrowth, ResidentBytesReadsThisProcess) {
  EXPECT_GT(resident_bytes(), 1 * kMiB);  // a gtest binary holds more than a MiB
}

}  // namespace
}  // namespace sparsejit::cli::soak
