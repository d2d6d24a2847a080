// The runtime end to end on the GPU: every SpMM and SDDMM variant (forced) and auto, f32 and
// f64, K = 1, 3, 7, 32, 33, 100, 128, 512, on generated and shared matrices, against the CPU
// reference with fresh random values and outputs poisoned with NaN before every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "cuda/graph.hpp"
#include "plan/choose.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class RuntimeGpu : public test::GpuSuite {};

// Matrices with structure that stresses different paths: uniform, banded, power-law (long
// rows), clustered, empty rows, rectangular.
std::vector<std::pair<std::string, Csr<double>>> generated_matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  for (const char* spec : {"uniform:3000:9", "band:2000:16:40", "rmat:4096:40000", "clustered:2048:24:0.6:16", "blockdiag:1500:30:2"})
    out.emplace_back(spec, generate::from_spec(spec, 7));
  Csr<double> rect = generate::uniform(700, 1900, 5, 3);
  for (int32_t r = 0; r < rect.rows; r += 7)  // empty every 7th row
    for (int32_t e = rect.row_ptr[r]; e < rect.row_ptr[r + 1]; ++e) rect.values[e] = 0;
  out.emplace_back("uniform 700x1900", rect);
  return out;
}

std::vector<std::pair<std::string, Csr<double>>> shared_matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  for (const auto& file : test::shared_matrix_files()) {
    for (const char* name : {"cora.mtx", "bcsstk13.mtx", "Groebner_id2003_aug.mtx", "wiki-Vote.mtx", "0.9/bottleneck_2_block_group3_3_1.smtx"}) {
      if (file.find(name) != std::string::npos && file.find("random_pruning") == std::string::npos &&
          file.find("variational") == std::string::npos)
        out.emplace_back(file.substr(file.find_last_of('/') + 1), io::read_csr<double>(file));
    }
  }
  return out;
}

template <class T>
void check_sddmm(Runtime& rt, const std::string& name, const Csr<double>& pattern, int32_t k, const Options& options,
                 uint64_t seed) {
  SCOPED_TRACE(name + " k=" + std::to_string(k) + " variant=" + (options.variant.empty() ? "auto" : options.variant) +
               " seed=" + std::to_string(seed));
  Csr<T> s = cast<T>(pattern);
  generate::fill_random(s.values, seed);
  Dense<T> a(s.rows, k), b(s.cols, k);
  generate::fill_random(a, seed + 1);
  generate::fill_random(b, seed + 2);
  Csr<T> expected;
  reference::sddmm(s, a, b, expected);

  DeviceCsr<T> ds(rt.context(), s);
  DeviceDense<T> da(rt.context(), a), db(rt.context(), b);
  DeviceBuffer dp(rt.context(), std::max<std::size_t>(1, s.values.size()) * sizeof(T));
  std::shared_ptr<const Decision> previous;
  for (int round = 0; round < 2; ++round) {
    dp.fill_bytes(0xFF);
    const CallInfo call = rt.sddmm(ds, da, db, dp, options);
    rt.context().synchronize();
    test::expect_plan_reuse(call, previous);
    previous = call.decision;
    if (!options.variant.empty()) {
      EXPECT_EQ(call.decision->variant, options.variant);
    }
    const auto got = dp.download_as<T>(s.values.size());
    ASSERT_LE(test::relative_error(test::as_double(got), test::as_double(expected.values)), test::gpu_tolerance<T>());
  }
}

Options variant(const std::string& name, bool transpose = false) {
  Options o;
  o.variant = name;
  o.transpose_a = transpose;
  return o;
}

TEST_F(RuntimeGpu, SpmmEveryVariantTypeAndK) {
  for (const auto& [name, m] : generated_matrices()) {
    for (int32_t k : {1, 3, 7, 32, 33, 100, 128, 512}) {
      for (const std::string v : {"csr_rowwarp", "cusparse", ""}) {
        test::check_spmm_twice<float>(rt(), name, m, k, variant(v), next_seed());
        test::check_spmm_twice<double>(rt(), name, m, k, variant(v), next_seed());
      }
      test::check_spmm_twice<float>(rt(), name, m, k, variant("", true), next_seed());
      test::check_spmm_twice<double>(rt(), name, m, k, variant("cusparse", true), next_seed());
    }
  }
}

TEST_F(RuntimeGpu, SpmmSharedMatrices) {
  const auto matrices = shared_matrices();
  if (matrices.empty()) GTEST_SKIP() << "no shared matrices";
  for (const auto& [name, m] : matrices)
    for (int32_t k : {1, 33, 128, 512})
      for (const std::string v : {"csr_rowwarp", "cusparse", ""}) test::check_spmm_twice<float>(rt(), name, m, k, variant(v), next_seed());
}

TEST_F(RuntimeGpu, SddmmEveryVariantTypeAndK) {
  for (const auto& [name, m] : generated_matrices()) {
    for (int32_t k : {1, 3, 32, 33, 100, 128}) {
      for (const std::string v : {"coo_flat", "cusparse", ""}) {
        check_sddmm<float>(rt(), name, m, k, variant(v), next_seed());
        check_sddmm<double>(rt(), name, m, k, variant(v), next_seed());
      }
    }
  }
}

TEST_F(RuntimeGpu, SddmmSharedMatrices) {
  const auto matrices = shared_matrices();
  if (matrices.empty()) GTEST_SKIP() << "no shared matrices";
  for (const auto& [name, m] : matrices)
    for (int32_t k : {1, 33, 128})
      for (const std::string v : {"coo_flat", "cusparse", ""}) check_sddmm<float>(rt(), name, m, k, variant(v), next_seed());
}

TEST_F(RuntimeGpu, EmptyMatrixGivesZeroOutput) {
  test::expect_empty_gives_zeros(rt(), Options{});
}

TEST_F(RuntimeGpu, ShapeMismatchIsInvalidInput) {
  const Csr<float> a = cast<float>(generate::uniform(10, 20, 3, 1));
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), 19, 8), dc(rt().context(), 10, 8);
  EXPECT_THROW(rt().spmm(da, db, dc), InvalidInputError);
  DeviceDense<float> sa(rt().context(), 10, 8), sb(rt().context(), 20, 7);
  DeviceBuffer p(rt().context(), a.values.size() * sizeof(float));
  EXPECT_THROW(rt().sddmm(da, sa, sb, p), InvalidInputError);
  DeviceCsr<half> ha(rt().context(), cast<half>(a));
  DeviceDense<half> hb(rt().context(), 20, 8), hc(rt().context(), 10, 8);
  EXPECT_THROW(rt().spmm(ha, hb, hc), UnsupportedError);
}

TEST_F(RuntimeGpu, ConcurrentCallsOnOneHandleAgree) {
  const Csr<float> a = cast<float>(generate::from_spec("rmat:8192:80000", 3));
  Dense<float> b(a.cols, 64);
  generate::fill_random(b, next_seed());
  Dense<float> expected;
  reference::spmm(a, b, expected);
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), b);
  std::vector<std::thread> threads;
  std::vector<double> errors(8, -1);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      DeviceDense<float> dc(rt().context(), a.rows, 64);
      Stream stream(rt().context());
      Options o;
      o.stream = stream.handle();
      o.variant = t % 2 ? "cusparse" : "";
      for (int i = 0; i < 5; ++i) {
        dc.buffer().fill_bytes_async(0xFF, stream.handle());
        rt().spmm(da, db, dc, o);
      }
      stream.synchronize();
      const Dense<float> got = dc.download();
      errors[std::size_t(t)] = test::relative_error(test::as_double(got.data), test::as_double(expected.data));
    });
  }
  for (auto& th : threads) th.join();
  for (double e : errors) EXPECT_LE(e, 1e-5);
}

// One SpMM on its own handle of `a` with poisoned C, checked against `expected`.
struct SpmmOnHandle {
  SpmmOnHandle(Runtime& rt, const Csr<float>& a, const Dense<float>& b)
      : rt(rt), da(rt.context(), a), db(rt.context(), b), dc(rt.context(), a.rows, b.cols) {
    reference::spmm(a, b, expected);
  }
  CallInfo call(const Options& options) {
    dc.buffer().fill_bytes(0xFF);
    const CallInfo info = rt.spmm(da, db, dc, options);
    rt.context().synchronize();
    EXPECT_LE(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), 1e-5)
        << describe(*info.decision);
    return info;
  }
  Runtime& rt;
  DeviceCsr<float> da;
  DeviceDense<float> db;
  DeviceDense<float> dc;
  Dense<float> expected;
};

// The fastest measured candidate is the chosen one (the vendor also when within `margin` of
// it), and the vendor was among those timed.
void expect_fastest_of_timed(const Decision& d, double margin = plan::kSpmmVendorMargin) {
  double fastest = std::numeric_limits<double>::infinity(), chosen = -1;
  bool vendor_timed = false;
  for (const Candidate& c : d.candidates) {
    if (c.measured_ms < 0) continue;
    fastest = std::min(fastest, c.measured_ms);
    if (c.variant == d.variant && c.params == d.params) chosen = c.measured_ms;
    vendor_timed |= c.variant == "cusparse";
  }
  EXPECT_TRUE(vendor_timed) << describe(d);
  EXPECT_GT(chosen, 0) << describe(d);
  const double allowed = d.variant == "cusparse" ? std::max(1 / (1 - margin), 1 + plan::kTieTolerance) : 1 + plan::kTieTolerance;
  EXPECT_LE(chosen, fastest * allowed * 1.0001) << describe(d);
}

TEST_F(RuntimeGpu, SecondCallTimesTheShortlistOnceAndOtherHandlesReuseTheTimes) {
  const Csr<float> a = cast<float>(generate::from_spec("rmat:6000:70000", next_seed()));
  test::forget_recorded(a.pattern());
  Dense<float> b(a.cols, 96);
  generate::fill_random(b, next_seed());
  const Options options = test::always_measure();
  SpmmOnHandle first(rt(), a, b);
  const CallInfo planned = first.call(options);
  EXPECT_NE(planned.decision->source, DecisionSource::Measured);
  const int64_t timed_before = rt().shortlists_timed();
  const CallInfo measured = first.call(options);
  ASSERT_EQ(measured.decision->source, DecisionSource::Measured) << describe(*measured.decision);
  EXPECT_FALSE(measured.plan_reused);
  EXPECT_GT(measured.decision->measure_ms, 0);
  EXPECT_EQ(rt().shortlists_timed(), timed_before + 1);
  expect_fastest_of_timed(*measured.decision);
  const CallInfo settled = first.call(options);
  EXPECT_TRUE(settled.plan_reused);
  EXPECT_EQ(settled.decision, measured.decision);

  SpmmOnHandle second(rt(), a, b);  // same pattern, new handle: the times are reused
  const CallInfo shared = second.call(options);
  EXPECT_EQ(rt().shortlists_timed(), timed_before + 1);
  EXPECT_EQ(shared.decision->source, DecisionSource::Measured);
  EXPECT_EQ(shared.decision->measure_ms, 0);
  EXPECT_TRUE(shared.decision->measure_steps.empty());
  EXPECT_EQ(shared.decision->variant, measured.decision->variant);
  EXPECT_EQ(shared.decision->params, measured.decision->params);
}

TEST_F(RuntimeGpu, ReuseManyMeasuresOnTheFirstCallAndMeasureOffNever) {
  const Csr<float> a = cast<float>(generate::from_spec("band:5000:12:30", next_seed()));
  test::forget_recorded(a.pattern());
  Dense<float> b(a.cols, 64);
  generate::fill_random(b, next_seed());
  Options off = test::always_measure();
  off.measure = false;
  SpmmOnHandle unmeasured(rt(), a, b);
  for (int i = 0; i < 3; ++i) EXPECT_NE(unmeasured.call(off).decision->source, DecisionSource::Measured);
  Options many = test::always_measure();
  many.reuse = Reuse::Many;
  SpmmOnHandle reused(rt(), a, b);
  const CallInfo first = reused.call(many);
  ASSERT_EQ(first.decision->source, DecisionSource::Measured) << describe(*first.decision);
  EXPECT_GT(first.decision->measure_ms, 0);
  expect_fastest_of_timed(*first.decision);
  // The unmeasured handle keeps the model's plan after the pattern was measured.
  EXPECT_NE(unmeasured.call(off).decision->source, DecisionSource::Measured);
}

TEST_F(RuntimeGpu, ACallBeingCapturedNeverMeasuresAndReplaysCorrectly) {
  const Csr<float> a = cast<float>(generate::from_spec("uniform:4000:11", next_seed()));
  test::forget_recorded(a.pattern());
  Dense<float> b(a.cols, 32);
  generate::fill_random(b, next_seed());
  SpmmOnHandle h(rt(), a, b);
  Stream stream(rt().context());
  Options options = test::always_measure();
  options.stream = stream.handle();
  EXPECT_NE(h.call(options).decision->source, DecisionSource::Measured);
  CallInfo captured;
  const cuda::CapturedGraph graph(rt().context(), stream.handle(), [&] { captured = rt().spmm(h.da, h.db, h.dc, options); });
  EXPECT_NE(captured.decision->source, DecisionSource::Measured);
  h.dc.buffer().fill_bytes(0xFF);
  graph.launch(stream.handle());
  stream.synchronize();
  EXPECT_LE(test::relative_error(test::as_double(h.dc.download().data), test::as_double(h.expected.data)), 1e-5);
  EXPECT_EQ(h.call(options).decision->source, DecisionSource::Measured);  // the next plain call measures
}

TEST_F(RuntimeGpu, SddmmSecondCallTimesTheShortlistAndOtherHandlesReuseTheTimes) {
  test::SddmmCase c(rt(), "uniform:3000:40", 64, next_seed());
  test::forget_recorded(c.s.pattern());
  const auto call = [&](const DeviceCsr<float>& ds) {
    c.dp.fill_bytes(0xFF);
    const CallInfo info = rt().sddmm(ds, c.da, c.db, c.dp, test::always_measure());
    rt().context().synchronize();
    EXPECT_LE(c.error(), 1e-5) << describe(*info.decision);
    return info;
  };
  EXPECT_NE(call(c.ds).decision->source, DecisionSource::Measured);
  const CallInfo measured = call(c.ds);
  ASSERT_EQ(measured.decision->source, DecisionSource::Measured) << describe(*measured.decision);
  EXPECT_GT(measured.decision->measure_ms, 0);
  expect_fastest_of_timed(*measured.decision, plan::kSddmmVendorMargin);
  EXPECT_TRUE(call(c.ds).plan_reused);
  DeviceCsr<float> second(rt().context(), c.s);
  const CallInfo shared = call(second);
  EXPECT_EQ(shared.decision->source, DecisionSource::Measured);
  EXPECT_EQ(shared.decision->measure_ms, 0);
  EXPECT_EQ(shared.decision->variant, measured.decision->variant);
}

}  // namespace
}  // namespace sparsejit
