#include "support/gpu_suite.hpp"

#include <memory>

#include "jit/compiler.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"

namespace sparsejit::test {

namespace {
std::unique_ptr<Runtime>& shared_runtime() {
  static std::unique_ptr<Runtime> runtime;
  return runtime;
}
}  // namespace

void GpuSuite::SetUp() {
  if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
  if (!shared_runtime()) shared_runtime() = std::make_unique<Runtime>(0);
  seed_ = fresh_seed();
}

Runtime& GpuSuite::rt() { return *shared_runtime(); }

void forget_recorded(PatternView pattern) {
  const std::string fp = fingerprint_hex(fingerprint(pattern));
  jit::default_compiler().cache().store().remove_measured_records(
      [&](const cache::TuningRecord& r) { return r.fingerprint == fp; });
}

void check_new_values_follow(Runtime& rt, Csr<float> a, int32_t k, const Options& options, int rounds, uint64_t seed) {
  SCOPED_TRACE((options.variant.empty() ? std::string("auto") : options.variant) + options.params.dump() +
               " seed=" + std::to_string(seed));
  generate::fill_random(a.values, seed++);
  Dense<float> b(a.cols, k);
  generate::fill_random(b, seed++);
  DeviceCsr<float> da(rt.context(), a);
  DeviceDense<float> db(rt.context(), b);
  DeviceDense<float> dc(rt.context(), a.rows, k);
  std::shared_ptr<const Decision> previous;
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) {
      generate::fill_random(a.values, seed++);
      da.update_values(a.values);
    }
    Dense<float> expected;
    reference::spmm(a, b, expected);
    dc.buffer().fill_bytes(0xFF);
    const CallInfo call = rt.spmm(da, db, dc, options);
    rt.context().synchronize();
    expect_plan_reuse(call, previous);
    previous = call.decision;
    ASSERT_LE(relative_error(as_double(dc.download().data), as_double(expected.data)), 1e-5) << "round " << round;
  }
}

void expect_empty_gives_zeros(Runtime& rt, const Options& options) {
  Csr<float> empty;
  empty.rows = 5;
  empty.cols = 4;
  empty.row_ptr.assign(6, 0);
  DeviceCsr<float> da(rt.context(), empty);
  const bool t = options.transpose_a;
  DeviceDense<float> db(rt.context(), Dense<float>(t ? 5 : 4, 8, 1.0f));
  DeviceDense<float> dc(rt.context(), t ? 4 : 5, 8);
  dc.buffer().fill_bytes(0xFF);
  rt.spmm(da, db, dc, options);
  for (float x : dc.download().data)
    ASSERT_EQ(x, 0.0f) << (options.variant.empty() ? "auto" : options.variant) << (t ? " Aᵀ·B" : " A·B");
}

}  // namespace sparsejit::test
