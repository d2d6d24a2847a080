// The progress line of `bench` and `tune` (tools/cli/progress.cpp): durations, the ETA from the
// mean time per item, the line and its fitting to a terminal, when a log gets a line, and what
// the class writes on a terminal and in a log.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "cli/progress.hpp"

namespace sparsejit::cli {
namespace {

TEST(FormatDuration, SecondsMinutesHours) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(59), "59s");
  EXPECT_EQ(format_duration(59.6), "1m00s");  // rounded before it is split
  EXPECT_EQ(format_duration(60), "1m00s");
  EXPECT_EQ(format_duration(62), "1m02s");
  EXPECT_EQ(format_duration(3599), "59m59s");
  EXPECT_EQ(format_duration(3600), "1h00m");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(3779), "1h02m");  // hours and whole minutes: the seconds dropped
  EXPECT_EQ(format_duration(100 * 3600), "100h00m");
  EXPECT_EQ(format_duration(-5), "0s");
  EXPECT_EQ(format_duration(std::nan("")), "0s");
}

TEST(EtaSeconds, MeanTimePerFinishedWeightTimesWhatIsLeft) {
  // 12 of 40 in 62 s: 62/12 s each, 28 left.
  EXPECT_DOUBLE_EQ(*eta_seconds(62, 12, 40), 62.0 / 12 * 28);
  EXPECT_EQ(format_duration(*eta_seconds(62, 12, 40)), "2m25s");
  EXPECT_DOUBLE_EQ(*eta_seconds(10, 1, 2), 10);
  // Weighted: a quarter of the work in 30 s leaves three quarters, 90 s.
  EXPECT_DOUBLE_EQ(*eta_seconds(30, 64, 256), 90);
  EXPECT_DOUBLE_EQ(*eta_seconds(100, 40, 40), 0);
  EXPECT_DOUBLE_EQ(*eta_seconds(100, 41, 40), 0);  // never negative
  EXPECT_FALSE(eta_seconds(5, 0, 40).has_value());  // nothing done: no mean yet
}

TEST(NextItemFits, NotPastTheLimitNorOneMeanItemBeyondIt) {
  EXPECT_TRUE(next_item_fits(0, 0, 600));     // nothing done: the first item starts
  EXPECT_TRUE(next_item_fits(590, 0, 600));   // still no mean to judge by
  EXPECT_FALSE(next_item_fits(600, 0, 600));  // the limit reached
  EXPECT_FALSE(next_item_fits(700, 5, 600));
  // 10 items in 500 s: 50 s each; one more ends at 550 s, two more at 600 s.
  EXPECT_TRUE(next_item_fits(500, 10, 550));
  EXPECT_FALSE(next_item_fits(500, 10, 549));
  EXPECT_TRUE(next_item_fits(500, 10, std::numeric_limits<double>::infinity()));
}

TEST(ProgressLine, CountPercentItemElapsedEta) {
  EXPECT_EQ(progress_line(12, 40, "cyl6 k=128", 62, 62.0 / 12 * 28), "[12/40] 30% cyl6 k=128 · elapsed 1m02s · ETA 2m25s");
  EXPECT_EQ(progress_line(40, 40, "last", 3720, 0.0), "[40/40] 100% last · elapsed 1h02m · ETA 0s");
  EXPECT_EQ(progress_line(2, 3, "skipped.mtx", 1, std::nullopt), "[2/3] 66% skipped.mtx · elapsed 1s");
}

TEST(ProgressLine, FitsTheTerminalByShorteningTheItemFromTheLeft) {
  const std::string item = "0.9/some/long/folder/matrix k=128";
  const std::string full = progress_line(1, 4, item, 1, 3.0);
  EXPECT_EQ(full, "[1/4] 25% " + item + " · elapsed 1s · ETA 3s");
  EXPECT_EQ(progress_line(1, 4, item, 1, 3.0, 200), full);
  // 46 columns: the count and times take 32, one is kept free, so the item gets 13: "…" and
  // its last 12.
  const std::string fitted = progress_line(1, 4, item, 1, 3.0, 46);
  EXPECT_EQ(fitted, "[1/4] 25% …matrix k=128 · elapsed 1s · ETA 3s");
  // Too narrow for any of the item: the count and the times stay whole.
  EXPECT_EQ(progress_line(1, 4, item, 1, 3.0, 20), "[1/4] 25%  · elapsed 1s · ETA 3s");
}

TEST(LogLineDue, EveryFiveSecondsOrTenthAndTheLast) {
  EXPECT_FALSE(log_line_due(1, 40, 0, 1.0));   // 2.5%, 1 s after the last line
  EXPECT_TRUE(log_line_due(1, 40, 0, 5.0));    // 5 s
  EXPECT_FALSE(log_line_due(7, 40, 4, 2.0));   // still within the second tenth
  EXPECT_TRUE(log_line_due(8, 40, 7, 0.1));    // 20%: another tenth
  EXPECT_TRUE(log_line_due(40, 40, 39, 0.0));  // the last, always
  EXPECT_TRUE(log_line_due(3, 3, 3, 0.0));
}

TEST(Progress, ALogGetsThrottledWholeLines) {
  std::ostringstream out;
  // Started 10 s ago: the first item comes 10 s after the start, past kLogSeconds.
  Progress p(40, 40, ProgressStyle::Log, out, Progress::Clock::now() - std::chrono::seconds(10));
  p.finished("a");
  EXPECT_EQ(out.str(), "[1/40] 2% a · elapsed 10s · ETA 6m30s\n");
  p.finished("b");  // at once, and in the same tenth: no line
  p.finished("c");
  EXPECT_EQ(out.str(), "[1/40] 2% a · elapsed 10s · ETA 6m30s\n");
  p.finished("d");  // 10%
  EXPECT_NE(out.str().find("\n[4/40] 10% d · elapsed 10s · ETA 1m30s\n"), std::string::npos) << out.str();
  // 36 items skipped without measuring: counted, and taken out of the ETA's remaining work.
  p.skipped(36, 36, "the rest");
  EXPECT_NE(out.str().find("\n[40/40] 100% the rest · elapsed 10s · ETA 0s\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
}

TEST(Progress, ATerminalLineIsRewrittenAndOtherLinesGoAboveIt) {
  std::ostringstream out, other;
  {
    Progress p(2, 2, ProgressStyle::Terminal, out);
    p.finished("a");
    EXPECT_EQ(out.str(), "\r\033[K[1/2] 50% a · elapsed 0s · ETA 0s");
    p.print(other, "{\"json\": 1}");
    EXPECT_EQ(other.str(), "{\"json\": 1}\n");
    // Erased before the other line, drawn again after it.
    EXPECT_EQ(out.str(), "\r\033[K[1/2] 50% a · elapsed 0s · ETA 0s\r\033[K[1/2] 50% a · elapsed 0s · ETA 0s");
    p.finished("b");  // the last: the line is closed
    EXPECT_EQ(out.str().substr(out.str().size() - 41), "\r\033[K[2/2] 100% b · elapsed 0s · ETA 0s\n");
  }
  // A run cut short leaves its line closed by the destructor.
  std::ostringstream cut;
  { Progress(3, 3, ProgressStyle::Terminal, cut).finished("a"); }
  EXPECT_EQ(cut.str().back(), '\n');
}

TEST(Progress, OffWritesNoProgressButStillPrints) {
  std::ostringstream out, other;
  Progress p(1, 1, ProgressStyle::Off, out);
  p.print(other, "line");
  p.finished("a");
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(other.str(), "line\n");
  EXPECT_EQ(p.done(), 1);
}

}  // namespace
}  // namespace sparsejit::cli
