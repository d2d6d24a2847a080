// Measured selections remembered in the cache database, on the CPU: what the runtime stores
// (ops::store_selection) is what explain and a call's planning take back as source recorded
// (ops::recorded_earlier, ops::take_earlier), for this device, library, driver and model only;
// Options::measure = false and a record whose choice this problem rejects leave the model's
// choice. Explain plans for the nominal sm_90 part here, whose device key records are stored
// under as any GPU's would be.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>

#include "jit/compiler.hpp"
#include "ops/measured_selection.hpp"
#include "ops/plan_sources.hpp"
#include "ops/problem_keys.hpp"
#include "ops/runtime_state.hpp"
#include "ops/selection_records.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/runtime.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

// This process's cache, set before anything opens the process-wide cache.
const std::string kCacheDir = test::use_fresh_cache_dir("records");

// Removes kCacheDir when the tests are done.
class RemoveCacheDir : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(kCacheDir); }
};
const auto* const kRemoveCacheDir = ::testing::AddGlobalTestEnvironment(new RemoveCacheDir);

const plan::DeviceTarget& target() {
  static const plan::DeviceTarget t = detail::explain_target(0);
  return t;
}

// The first eligible, priced candidate of `d` other than its choice and the vendor.
const Candidate& another_candidate(const Decision& d) {
  for (const Candidate& c : d.candidates)
    if (c.variant != d.variant && c.variant != "cusparse" && c.rejected_because.empty() && std::isfinite(c.predicted_ms))
      return c;
  throw std::runtime_error("no other candidate in " + describe(d));
}

// Stores, as measured selection would, that `faster` ran in half the time of the model's choice.
void record_faster(Op op, PatternView pattern, const std::string& problem_key, const Decision& planned,
                   const Candidate& faster, const std::string& model_version = "") {
  cache::MeasuredKey key = ops::measured_key(op, target(), inspect(pattern), problem_key);
  if (!model_version.empty()) key.model_version = model_version;
  Decision measured = planned;
  measured.variant = faster.variant;
  measured.params = faster.params;
  const std::vector<plan::RecordedTiming> timed = {
      {planned.variant, planned.params, 1.0, 0.5, nlohmann::json::object()},
      {faster.variant, faster.params, 0.5, faster.predicted_ms, faster.terms}};
  ops::store_selection(key, measured, timed);
}

// The problem key of explain_spmm(pattern, 64, f32) with default options.
std::string spmm_k64_key() { return ops::spmm_problem_key({64, DType::F32, false, 64, 64}, {}); }

class RecordedSelection : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(jit::default_compiler().cache().store().path(), cache::database_path(kCacheDir)); }
};

TEST_F(RecordedSelection, SpmmExplainTakesTheRecordOfThisDeviceAndModel) {
  const Csr<double> m = generate::uniform(3000, 3000, 9, 11);
  const Decision planned = explain_spmm(m.pattern(), 64, DType::F32);
  ASSERT_EQ(planned.source, DecisionSource::Model) << describe(planned);
  const Candidate faster = another_candidate(planned);
  record_faster(Op::SpMM, m.pattern(), spmm_k64_key(), planned, faster);

  const Decision recorded = explain_spmm(m.pattern(), 64, DType::F32);
  EXPECT_EQ(recorded.source, DecisionSource::Recorded) << describe(recorded);
  EXPECT_EQ(recorded.variant, faster.variant);
  EXPECT_EQ(recorded.params, faster.params);
  EXPECT_EQ(recorded.measure_ms, 0);
  int timed = 0;
  for (const Candidate& c : recorded.candidates) timed += c.measured_ms >= 0;
  EXPECT_EQ(timed, 2) << describe(recorded);

  // The same pattern at another K is another problem; measure = false keeps the model's choice.
  EXPECT_EQ(explain_spmm(m.pattern(), 32, DType::F32).source, DecisionSource::Model);
  Options unmeasured;
  unmeasured.measure = false;
  EXPECT_EQ(explain_spmm(m.pattern(), 64, DType::F32, unmeasured).source, DecisionSource::Model);
  // A forced choice is the caller's, whatever was recorded.
  Options forced;
  forced.variant = planned.variant;
  EXPECT_EQ(explain_spmm(m.pattern(), 64, DType::F32, forced).source, DecisionSource::Forced);
}

// A record of another model (a retrained or shipped model since) is stale: never taken.
TEST_F(RecordedSelection, RecordOfAnotherModelIsIgnored) {
  const Csr<double> m = generate::uniform(2500, 2500, 7, 12);
  const Decision planned = explain_spmm(m.pattern(), 64, DType::F32);
  record_faster(Op::SpMM, m.pattern(), spmm_k64_key(), planned, another_candidate(planned), "spmm-default v0 000000000000");
  EXPECT_EQ(explain_spmm(m.pattern(), 64, DType::F32).source, DecisionSource::Model);
}

TEST_F(RecordedSelection, SddmmExplainTakesTheRecord) {
  const Csr<double> m = generate::uniform(2000, 2000, 12, 13);
  const plan::SddmmProblem problem{32, DType::F32, 32, 32};
  const Decision planned = explain_sddmm(m.pattern(), 32, DType::F32);
  ASSERT_EQ(planned.source, DecisionSource::Model) << describe(planned);
  const Candidate faster = another_candidate(planned);
  record_faster(Op::SDDMM, m.pattern(), ops::sddmm_problem_key(problem, {}), planned, faster);
  const Decision recorded = explain_sddmm(m.pattern(), 32, DType::F32);
  EXPECT_EQ(recorded.source, DecisionSource::Recorded) << describe(recorded);
  EXPECT_EQ(recorded.variant, faster.variant);
  // Declared reused, the pattern is another problem (other variants are admitted).
  Options many;
  many.reuse = Reuse::Many;
  EXPECT_EQ(explain_sddmm(m.pattern(), 32, DType::F32, many).source, DecisionSource::Model);
}

// A recorded fastest that this problem rejects (here: a name no candidate has) is not taken.
TEST_F(RecordedSelection, RecordedChoiceThisProblemRejectsIsNotTaken) {
  const Csr<double> m = generate::uniform(1800, 1800, 6, 14);
  const Decision planned = explain_spmm(m.pattern(), 64, DType::F32);
  Candidate unknown;
  unknown.variant = "no_such_variant";
  record_faster(Op::SpMM, m.pattern(), spmm_k64_key(), planned, unknown);
  const auto earlier = ops::recorded_earlier(Op::SpMM, target(), inspect(m.pattern()), spmm_k64_key(), {});
  ASSERT_TRUE(earlier.has_value());
  EXPECT_EQ(earlier->source, DecisionSource::Recorded);
  Decision d = planned;
  EXPECT_FALSE(ops::take_earlier(d, earlier, plan::kSpmmVendorMargin));
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(explain_spmm(m.pattern(), 64, DType::F32).variant, planned.variant);
}

}  // namespace
}  // namespace sparsejit
