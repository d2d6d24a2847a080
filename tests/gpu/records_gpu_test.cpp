// Issue 26's device targets for remembered measured selections: a second Runtime in this
// process, and a second process (the CLI's `run` twice on one cache directory), meeting a
// pattern the first measured take the stored choice with Decision source recorded, time no
// shortlist (Runtime::shortlists_timed stays 0) and run the same variant and parameters,
// correctly.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

namespace fs = std::filesystem;

class RecordsGpu : public test::GpuSuite {};

// SpMM of `pattern` at K = 96 on a fresh handle in `runtime` (values from `seed`), checked
// against the CPU reference.
CallInfo checked_spmm(Runtime& runtime, const Csr<double>& pattern, uint64_t seed, const Options& options) {
  test::SpmmCase<float> c(runtime, pattern, 96, false, seed);
  c.dc.buffer().fill_bytes(0xFF);
  const CallInfo info = runtime.spmm(c.da, c.db, c.dc, options);
  runtime.context().synchronize();
  EXPECT_LE(test::relative_error(test::as_double(c.dc.download().data), test::as_double(c.expected.data)), 1e-5)
      << describe(*info.decision);
  return info;
}

TEST_F(RecordsGpu, SecondRuntimeTakesTheSpmmRecordWithoutTiming) {
  const Csr<double> pattern = generate::from_spec("rmat:6000:70000", next_seed());
  test::forget_recorded(pattern.pattern());
  const uint64_t seed = next_seed();
  Options many = test::always_measure();
  many.reuse = Reuse::Many;  // the first call measures
  const CallInfo measured = checked_spmm(rt(), pattern, seed, many);
  ASSERT_EQ(measured.decision->source, DecisionSource::Measured) << describe(*measured.decision);

  Runtime second(0);
  const CallInfo recorded = checked_spmm(second, pattern, seed, many);
  EXPECT_EQ(recorded.decision->source, DecisionSource::Recorded) << describe(*recorded.decision);
  EXPECT_EQ(second.shortlists_timed(), 0);
  EXPECT_EQ(recorded.decision->variant, measured.decision->variant);
  EXPECT_EQ(recorded.decision->params, measured.decision->params);
  EXPECT_EQ(recorded.decision->measure_ms, 0);
  // A call that does not declare reuse, on a new handle, takes it on its first call too.
  const CallInfo once = checked_spmm(second, pattern, seed, test::always_measure());
  EXPECT_EQ(once.decision->source, DecisionSource::Recorded);
  EXPECT_EQ(second.shortlists_timed(), 0);
}

TEST_F(RecordsGpu, SecondRuntimeTakesTheSddmmRecordWithoutTiming) {
  test::SddmmCase c(rt(), "uniform:3000:40", 64, next_seed());
  test::forget_recorded(c.s.pattern());
  Options many = test::always_measure();
  many.reuse = Reuse::Many;
  const CallInfo measured = rt().sddmm(c.ds, c.da, c.db, c.dp, many);
  ASSERT_EQ(measured.decision->source, DecisionSource::Measured) << describe(*measured.decision);

  Runtime second(0);
  DeviceCsr<float> ds(second.context(), c.s);
  DeviceDense<float> da(second.context(), c.a), db(second.context(), c.b);
  DeviceBuffer dp(second.context(), c.s.values.size() * sizeof(float));
  dp.fill_bytes(0xFF);
  const CallInfo recorded = second.sddmm(ds, da, db, dp, many);
  second.context().synchronize();
  EXPECT_EQ(recorded.decision->source, DecisionSource::Recorded) << describe(*recorded.decision);
  EXPECT_EQ(second.shortlists_timed(), 0);
  EXPECT_EQ(recorded.decision->variant, measured.decision->variant);
  EXPECT_EQ(recorded.decision->params, measured.decision->params);
  EXPECT_LE(test::relative_error(test::as_double(dp.download_as<float>(c.s.values.size())), test::as_double(c.expected.values)),
            1e-5);
}

// The first line of `run`'s report: "spmm NAME k=K f32: VARIANT {params}".
std::string choice_line(const std::string& out) { return out.substr(0, out.find('\n')); }

// Two processes on one fresh cache: the first measures (its second call, inside the timing
// loop) and stores the record; the second takes it on its first call and times nothing.
TEST_F(RecordsGpu, SecondProcessTakesTheRecordWithoutTiming) {
  const fs::path cache = test::fresh_dir("records-processes");
  const std::string env = "SPARSEJIT_CACHE_DIR='" + cache.string() + "'";
  const std::string args = "run gen:rmat:6000:70000 --op spmm -k 96 --repeat 5 --check --measure-skip-margin inf --measure-budget-calls inf";
  const test::CliResult first = test::run_cli(args, env);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("decision source measured; shortlists timed in this process: 1"), std::string::npos) << first.out;
  const test::CliResult second = test::run_cli(args, env);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("decision source recorded; shortlists timed in this process: 0"), std::string::npos)
      << second.out;
  EXPECT_EQ(choice_line(second.out), choice_line(first.out));
  const test::CliResult records = test::run_cli("cache list --records --dir '" + cache.string() + "'", "");
  EXPECT_NE(records.out.find("plan:spmm:f32:k96:n:ld4"), std::string::npos) << records.out;
  EXPECT_EQ(records.out.find("stale:"), std::string::npos) << records.out;
  fs::remove_all(cache);
}

}  // namespace
}  // namespace sparsejit
