// Every SDDMM variant forced with several parameter sets (tile shapes, K slices, group sizes,
// atomic and reduced combining, nonzeros per group, scalar and vector loads), f32 and f64,
// K = 1, 3, 32, 33, 100, 128, on generated matrices from 10% dense to 0.01%, power-law, with
// empty rows, rectangular; fresh random values, P poisoned with NaN (and the bytes past nnz
// checked untouched) before every run, compared with reference::sddmm. Then the reuse path:
// Reuse::Many admits reindexed_tiled, the second call reuses the plan and the reindexing, and
// a handle that served one SDDMM call is treated as reused by the next plan. row_gather,
// dense_tile, dense_mma and dense_wgmma have their own suite (sddmm_row_dense_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using nlohmann::json;
using test::empty_every;
using test::is_poison;
using test::widest;

class SddmmVariantsGpu : public test::GpuSuite {};

std::vector<std::pair<std::string, Csr<double>>> matrices() {
  return {{"10% 400x300", generate::uniform(400, 300, 30, 1)},
          {"1% 3000x3000", generate::uniform(3000, 3000, 30, 2)},
          {"0.01% 40000x40000", generate::uniform(40000, 40000, 4, 3)},
          {"rmat 4096", generate::from_spec("rmat:4096:40000", 4)},
          {"clustered 2048", generate::from_spec("clustered:2048:24:0.6:16", 5)},
          {"empty rows 700x1900", empty_every(generate::uniform(700, 1900, 5, 6), 7)},
          {"rectangular 5000x90", generate::uniform(5000, 90, 9, 7)}};
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Tiled parameter sets valid for this K: the slice is rounded to the group's vector step.
template <class T>
std::vector<json> tiled_param_sets(int32_t k) {
  const int w = widest<T>(k);
  auto set = [&](int width, int group, int max_slice, json extra) {
    extra.update({{"vector_width", width}, {"group_size", group},
                  {"slice", round_up(std::min<int64_t>(max_slice, k), int64_t(width) * group)}});
    return extra;
  };
  return {json::object(),  // the planner's defaults
          set(w, 4, 64, {{"combine", "reduce"}}),
          set(w, 1, 32, {{"combine", "atomic"}, {"tile_rows", 16}, {"tile_cols", 32}}),
          set(w, 8, 16, {{"combine", "reduce"}, {"tile_rows", 1}, {"tile_cols", 128}, {"threads_per_block", 128}}),
          set(1, 32, 64, {{"combine", "atomic"}, {"tile_rows", 512}, {"tile_cols", 7}})};
}

template <class T>
std::vector<json> coo_param_sets(int32_t k) {
  return {json::object(),
          {{"group_size", 4}, {"nnz_per_group", 1}},
          {{"group_size", 32}, {"nnz_per_group", 4}, {"threads_per_block", 128}},
          {{"vector_width", 1}, {"group_size", 8}, {"nnz_per_group", 2}},
          {{"vector_width", widest<T>(k)}, {"group_size", 1}, {"nnz_per_group", 1}, {"threads_per_block", 64}}};
}

struct Run {
  Options options;
  std::string label;
};

template <class T>
std::vector<Run> runs(int32_t k, void* stream) {
  std::vector<Run> out;
  auto add = [&](const std::string& variant, const json& params, Reuse reuse) {
    Run r;
    r.options.variant = variant;
    r.options.params = params;
    r.options.reuse = reuse;
    r.options.stream = out.size() % 2 ? stream : nullptr;
    r.label = (variant.empty() ? "auto" : variant) + " " + params.dump() + (reuse == Reuse::Many ? " reuse=many" : "");
    out.push_back(r);
  };
  for (const auto& p : coo_param_sets<T>(k)) add("coo_flat", p, Reuse::Once);
  for (const auto& p : tiled_param_sets<T>(k)) add("tiled_shared", p, Reuse::Once);
  for (const auto& p : tiled_param_sets<T>(k)) add("reindexed_tiled", p, Reuse::Many);
  add("cusparse", json::object(), Reuse::Once);
  add("", json::object(), Reuse::Once);
  add("", json::object(), Reuse::Many);
  return out;
}

template <class T>
void check(Runtime& rt, const std::string& name, const Csr<double>& pattern, int32_t k, const Run& run, uint64_t seed,
           const Stream& stream) {
  SCOPED_TRACE(name + " k=" + std::to_string(k) + " " + run.label + " seed=" + std::to_string(seed));
  Csr<T> s = cast<T>(pattern);
  generate::fill_random(s.values, seed);
  Dense<T> a(s.rows, k), b(s.cols, k);
  generate::fill_random(a, seed + 1);
  generate::fill_random(b, seed + 2);
  Csr<T> expected;
  reference::sddmm(s, a, b, expected);

  DeviceCsr<T> ds(rt.context(), s);
  DeviceDense<T> da(rt.context(), a), db(rt.context(), b);
  constexpr std::size_t kGuard = 16;  // elements past nnz that must stay untouched
  DeviceBuffer dp(rt.context(), (s.values.size() + kGuard) * sizeof(T));
  std::shared_ptr<const Decision> previous;
  for (int round = 0; round < 2; ++round) {
    dp.fill_bytes(0xFF);
    const CallInfo call = rt.sddmm(ds, da, db, dp, run.options);
    if (run.options.stream) stream.synchronize();
    rt.context().synchronize();
    ASSERT_TRUE(call.decision);
    test::expect_plan_reuse(call, previous);
    previous = call.decision;
    if (!run.options.variant.empty()) {
      ASSERT_EQ(call.decision->variant, run.options.variant);
    }
    const auto all = dp.download_as<T>(s.values.size() + kGuard);
    for (std::size_t i = s.values.size(); i < all.size(); ++i) ASSERT_TRUE(is_poison(all[i])) << "P written past nnz at " << i;
    const std::vector<double> got(all.begin(), all.begin() + std::ptrdiff_t(s.values.size()));
    for (double v : got) ASSERT_FALSE(std::isnan(v)) << "an output was not written";
    ASSERT_LE(test::relative_error(got, std::vector<double>(expected.values.begin(), expected.values.end())), test::gpu_tolerance<T>());
  }
}

TEST_F(SddmmVariantsGpu, EveryVariantParamSetTypeAndK) {
  Stream stream(rt().context());
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : {1, 3, 32, 33, 100, 128}) {
      for (const auto& run : runs<float>(k, stream.handle())) check<float>(rt(), name, m, k, run, next_seed(), stream);
      for (const auto& run : runs<double>(k, stream.handle())) check<double>(rt(), name, m, k, run, next_seed(), stream);
    }
  }
}

// Every variant and parameter set on two small shapes (empty rows; rectangular, fewer
// columns than a tile) at a vector and a scalar K: the subset tools/device_check.sh runs
// under compute-sanitizer, where kernels run 10-100x slower than here.
TEST_F(SddmmVariantsGpu, EveryVariantOnSmallShapes) {
  Stream stream(rt().context());
  const std::vector<std::pair<std::string, Csr<double>>> small = {
      {"empty rows 300x500", empty_every(generate::uniform(300, 500, 6, 8), 5)},
      {"rectangular 700x60", generate::uniform(700, 60, 7, 9)}};
  for (const auto& [name, m] : small) {
    for (int32_t k : {32, 33}) {
      for (const auto& run : runs<float>(k, stream.handle())) check<float>(rt(), name, m, k, run, next_seed(), stream);
      for (const auto& run : runs<double>(k, stream.handle())) check<double>(rt(), name, m, k, run, next_seed(), stream);
    }
  }
}

TEST_F(SddmmVariantsGpu, ReusedPatternBuildsTheReindexingOnceAndSeenHandlesCountAsReused) {
  Csr<float> s = cast<float>(generate::uniform(2000, 2000, 40, 11));  // 2%: the tree takes the tiled side
  generate::fill_random(s.values, next_seed());
  DeviceCsr<float> ds(rt().context(), s);
  Options many;  // the shipped tree no longer picks the tiled variants: forced here
  many.reuse = Reuse::Many;
  many.variant = "reindexed_tiled";
  const std::vector<int32_t> ks = {32, 48};
  std::shared_ptr<void> first_tiles;
  for (int call_index = 0; call_index < 3; ++call_index) {
    const int32_t k = ks[0];
    Dense<float> a(s.rows, k), b(s.cols, k);
    generate::fill_random(a, next_seed());  // fresh values every call, same pattern
    generate::fill_random(b, next_seed());
    generate::fill_random(s.values, next_seed());
    ds.update_values(s.values);
    Csr<float> expected;
    reference::sddmm(s, a, b, expected);
    DeviceDense<float> da(rt().context(), a), db(rt().context(), b);
    DeviceBuffer dp(rt().context(), s.values.size() * sizeof(float));
    dp.fill_bytes(0xFF);
    const CallInfo call = rt().sddmm(ds, da, db, dp, many);
    rt().context().synchronize();
    EXPECT_EQ(call.decision->variant, "reindexed_tiled");
    EXPECT_EQ(call.plan_reused, call_index > 0);
    const std::string key = "sddmm_tiles:reindexed:" + call.decision->params["tile_rows"].dump() + "x" +
                            call.decision->params["tile_cols"].dump();
    const std::shared_ptr<void> tiles = ds.find(key);
    ASSERT_TRUE(tiles) << key;
    if (call_index == 0) first_tiles = tiles;
    EXPECT_EQ(tiles, first_tiles) << "the reindexing was rebuilt";
    const auto got = dp.download_as<float>(s.values.size());
    ASSERT_LE(test::relative_error(std::vector<double>(got.begin(), got.end()),
                                   std::vector<double>(expected.values.begin(), expected.values.end())), 1e-5);
  }
  // Reuse::Once on a fresh handle: reindexed_tiled is refused; on this handle (already served
  // SDDMM) it is admitted.
  DeviceCsr<float> fresh(rt().context(), s);
  DeviceDense<float> da(rt().context(), s.rows, ks[1]), db(rt().context(), s.cols, ks[1]);
  da.upload(Dense<float>(s.rows, ks[1], 0.5f));
  db.upload(Dense<float>(s.cols, ks[1], 0.25f));
  DeviceBuffer dp(rt().context(), s.values.size() * sizeof(float));
  Options once;
  once.variant = "reindexed_tiled";
  EXPECT_THROW(rt().sddmm(fresh, da, db, dp, once), UnsupportedError);
  const CallInfo seen = rt().sddmm(ds, da, db, dp, once);
  EXPECT_EQ(seen.decision->variant, "reindexed_tiled");
  EXPECT_EQ(seen.decision->features["pattern_reused"], 1);
  rt().context().synchronize();
  const auto got = dp.download_as<float>(s.values.size());
  for (std::size_t e = 0; e < got.size(); ++e) ASSERT_NEAR(got[e], s.values[e] * ks[1] * 0.125f, 1e-5f) << e;
}

}  // namespace
}  // namespace sparsejit
