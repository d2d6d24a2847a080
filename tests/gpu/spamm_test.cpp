// SpAMM on the device: auto and every variant, each precision, against reference::spamm at
// the τ the call reports, on fresh random values (algebraic and exponential decay with random
// signs and perturbed magnitudes, and random near-sparse inputs), C poisoned (NaN bytes)
// before every call: non-square shapes, sizes that are not multiples of the tile, padded
// leading dimensions, each tile. Also: the reported selection equals the CPU's, the measured
// error against the exact product is at most the reported bound plus the precision's
// rounding, the τ searches reach their targets, and bad calls fail before C is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/spamm_choice.hpp"
#include "plan/spamm.hpp"
#include "variants/spamm/spamm_variant.hpp"
#include "sparsejit/error.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::GpuSuite;

class SpammGpu : public GpuSuite {};

enum class Input { Algebraic, Exponential, NearSparse };
const char* name_of(Input input) {
  return input == Input::Algebraic ? "algebraic" : input == Input::Exponential ? "exponential" : "near-sparse";
}

// rows x cols of the given kind, magnitudes perturbed by a factor in [0.5, 1.5) and signs
// random (both from `seed`), so tile norms differ and every call sees new values.
template <class T>
Dense<T> input(Input kind, int32_t rows, int32_t cols, uint64_t seed) {
  Dense<double> d;
  if (kind == Input::Algebraic) d = generate::algebraic_decay(rows, cols, 0.1, 0.1, generate::DecaySigns::Random, seed);
  else if (kind == Input::Exponential) d = generate::exponential_decay(rows, cols, 1.0, 0.97, generate::DecaySigns::Random, seed);
  else d = Dense<double>(rows, cols);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.5, 1.5), uniform(-1, 1);
  std::bernoulli_distribution present(0.08);
  for (double& v : d.data) v = kind == Input::NearSparse ? (present(rng) ? uniform(rng) : 0.0) : v * scale(rng);
  return cast<T>(d);
}

double frobenius(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

double frobenius_difference(const std::vector<double>& x, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += (x[i] - y[i]) * (x[i] - y[i]);
  return std::sqrt(s);
}

// Relative error allowed against the reference at the same τ, by precision: f32 and 3xTF32
// to f32 rounding, TF32 and fp16 operands rounded to 11 significant bits, bf16 to 8.
template <class T>
double tolerance(SpammPrecision precision) {
  switch (precision) {
    case SpammPrecision::Full: return test::gpu_tolerance<T>() * 10;
    case SpammPrecision::TF32:
    case SpammPrecision::FP16: return 2e-3;
    case SpammPrecision::BF16: return 1.5e-2;
  }
  return 0;
}

struct Shape {
  int32_t m, k, n;
  int64_t pad = 0;  // extra leading dimension of A, B and C
};

std::string label(const SpammOptions& o, const Shape& s, Input kind, uint64_t seed) {
  return std::string(o.variant.empty() ? "auto" : o.variant) + " " + to_string(o.precision) + " tile " + std::to_string(o.tile) + " " +
         std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + " pad " + std::to_string(s.pad) + " " +
         name_of(kind) + " seed " + std::to_string(seed);
}

// One call checked: C poisoned first; against reference::spamm at the reported τ and tile
// (cublas: against the exact product, which it computes); the selection against the CPU's;
// the exact product's distance within the bound plus rounding.
template <class T>
SpammInfo check_call(Runtime& rt, const Shape& s, Input kind, const SpammOptions& o, uint64_t seed) {
  const std::string what = label(o, s, kind, seed);
  const Dense<T> a = input<T>(kind, s.m, s.k, seed), b = input<T>(kind, s.k, s.n, seed + 1);
  DeviceDense<T> da(rt.context(), s.m, s.k, s.k + s.pad), db(rt.context(), s.k, s.n, s.n + s.pad),
      dc(rt.context(), s.m, s.n, s.n + s.pad);
  da.upload(a);
  db.upload(b);
  dc.buffer().fill_bytes(0xFF);
  const SpammInfo info = rt.spamm(da, db, dc, o);
  const Dense<T> got = dc.download();
  test::expect_all_written(got.data, what);
  const Decision& d = *info.decision;
  if (o.variant.empty()) EXPECT_NE(d.source, DecisionSource::Forced) << what;
  else EXPECT_EQ(d.variant, o.variant) << what;

  // The selection is the CPU's at the same τ.
  const SpammSelection cpu = spamm_selection(tile_norms(a, info.tile), tile_norms(b, info.tile), info.tau);
  EXPECT_EQ(info.valid_products, cpu.valid) << what;
  EXPECT_EQ(info.tile_products, cpu.triples) << what;
  EXPECT_NEAR(info.error_bound, cpu.error_bound, 1e-9 * (1 + cpu.error_bound)) << what;

  Dense<T> want;
  reference::spamm(a, b, want, info.tile, info.tau);
  const double err = test::relative_error(test::as_double(got.data), test::as_double(want.data));
  EXPECT_LE(err, tolerance<T>(o.precision)) << what << "\n" << describe(d);

  // ||C - A·B||F <= bound + the precision's rounding (relative to ||A·B||F).
  Dense<double> exact;
  reference::spamm(cast<double>(a), cast<double>(b), exact, info.tile, 0.0);
  const std::vector<double> exact_values = test::as_double(exact.data);
  const double measured = frobenius_difference(test::as_double(got.data), exact_values);
  EXPECT_LE(measured, info.error_bound + 2 * tolerance<T>(o.precision) * frobenius(exact_values))
      << what << ": measured ||E|| " << measured << ", bound " << info.error_bound;
  return info;
}

// Every path for a value type; wgmma (fp16 and bf16 on sm_90, tile 64) where it can run.
std::vector<SpammOptions> every_path(DType dtype, int32_t tile, int sm) {
  std::vector<SpammOptions> all;
  const auto add = [&](const std::string& variant, SpammPrecision precision) {
    SpammOptions o;
    o.variant = variant;
    o.precision = precision;
    all.push_back(o);
  };
  add("", SpammPrecision::Full);
  add("simt", SpammPrecision::Full);
  add("cublas", SpammPrecision::Full);
  if (dtype == DType::F32) {
    add("mma", SpammPrecision::Full);
    for (SpammPrecision p : {SpammPrecision::TF32, SpammPrecision::FP16, SpammPrecision::BF16}) {
      add("", p);
      add("mma", p);
      add("cublas", p);
      if (tile == 64 && sm == 90 && p != SpammPrecision::TF32) add("wgmma", p);
    }
  }
  return all;
}

// A τ that keeps about a fifth of the tile products, away from any product (the geometric
// middle between two neighbouring products of the CPU's norms), so rounding in the device's
// norm sums cannot move a product across it.
template <class T>
double fifth_tau(Input kind, const Shape& s, int32_t tile, uint64_t seed) {
  const NormMap na = tile_norms(input<T>(kind, s.m, s.k, seed), tile), nb = tile_norms(input<T>(kind, s.k, s.n, seed + 1), tile);
  std::vector<double> products;
  for (int32_t i = 0; i < na.tile_rows; ++i)
    for (int32_t k = 0; k < na.tile_cols; ++k)
      for (int32_t j = 0; j < nb.tile_cols; ++j) products.push_back(na.at(i, k) * nb.at(k, j));
  std::sort(products.begin(), products.end());
  const std::size_t at = products.size() * 4 / 5;
  return std::sqrt(products[at] * products[std::min(at + 1, products.size() - 1)]);
}

// The share a call at fifth_tau reports: near a fifth of the products, or every product when
// cuBLAS served it (it skips nothing whatever τ is, and says so: τ 0, share 1, bound 0).
void expect_fifth_or_everything(const SpammInfo& info) {
  if (variants::SpammRegistry::find(info.decision->variant)->traits.vendor) {
    EXPECT_EQ(info.tau, 0.0);
    EXPECT_EQ(info.valid_ratio, 1.0);
    EXPECT_EQ(info.error_bound, 0.0);
    return;
  }
  EXPECT_GT(info.valid_ratio, 0.1);
  EXPECT_LT(info.valid_ratio, 0.3);
  EXPECT_GT(info.error_bound, 0);
}

template <class T>
void every_path_on(Runtime& rt, const Shape& s, Input kind, int32_t tile, uint64_t seed) {
  for (SpammOptions o : every_path(dtype_of<T>::value, tile, rt.context().info().sm)) {
    o.tile = tile;
    o.tau = fifth_tau<T>(kind, s, tile, seed);
    expect_fifth_or_everything(check_call<T>(rt, s, kind, o, seed));
  }
}

TEST_F(SpammGpu, EveryPathF32OnDecayInputsOfOddSizes) {
  for (Input kind : {Input::Algebraic, Input::Exponential})
    every_path_on<float>(rt(), {200, 150, 100}, kind, 32, next_seed());
  every_path_on<float>(rt(), {257, 320, 191, 3}, Input::Algebraic, 64, next_seed());
}

TEST_F(SpammGpu, EveryPathF64) {
  every_path_on<double>(rt(), {200, 150, 100}, Input::Exponential, 32, next_seed());
  every_path_on<double>(rt(), {130, 129, 260, 1}, Input::Algebraic, 64, next_seed());
}

TEST_F(SpammGpu, EveryTileOnNearSparseInputs) {
  for (int32_t tile : plan::kSpammTiles) {
    every_path_on<float>(rt(), {300, 260, 290}, Input::NearSparse, tile, next_seed());
  }
}

// The tile variants search τ for the share; auto at this size (SGEMM ~0.05 ms, less than the
// search's round trips) takes cuBLAS before the norms and multiplies everything.
TEST_F(SpammGpu, ALargerDecayProductKeepsFivePercent) {
  SpammOptions o;
  o.valid_ratio = 0.05;
  for (const char* variant : {"simt", "mma"}) {
    o.variant = variant;
    const SpammInfo info = check_call<float>(rt(), {1024, 1024, 1024}, Input::Algebraic, o, next_seed());
    EXPECT_EQ(info.tile, 64);
    EXPECT_GT(info.search_iterations, 1);
    EXPECT_NEAR(info.valid_ratio, 0.05, 0.05 * 0.05) << "the search may stop on a step of the share; within 5% of it";
  }
  o.variant.clear();
  const SpammInfo info = check_call<float>(rt(), {1024, 1024, 1024}, Input::Algebraic, o, next_seed());
  EXPECT_EQ(info.decision->variant, "cublas") << describe(*info.decision);
  EXPECT_EQ(info.valid_ratio, 1.0);
}

TEST_F(SpammGpu, RatioSearchReachesItsTargetOnRandomNorms) {
  for (double target : {0.05, 0.25, 0.5}) {
    SpammOptions o;
    o.valid_ratio = target;
    o.tile = 32;
    o.variant = "simt";  // auto would take cuBLAS at this size rather than search
    const SpammInfo info = check_call<float>(rt(), {320, 384, 352}, Input::NearSparse, o, next_seed());
    EXPECT_NEAR(info.valid_ratio, target, o.ratio_tolerance * target) << target;
    EXPECT_GE(info.search_iterations, 1);
    EXPECT_GT(info.search_ms, 0);
  }
}

// The device's search (spamm_search.cu) takes the CPU search's steps: the same τ, evaluations
// and kept products, from norm maps each side computes (their sums differ only in rounding),
// for shares, a cut-off by max_search_iterations and an error target.
TEST_F(SpammGpu, DeviceSearchTakesTheCpuSearchSteps) {
  const Shape s{384, 320, 352};
  struct Target {
    double share, error_fraction;
    int iterations;
  };
  for (const Target target : {Target{0.01, 0, 40}, Target{0.1, 0, 40}, Target{0.4, 0, 40}, Target{0.01, 0, 3}, Target{0, 0.05, 40}}) {
    const uint64_t seed = next_seed();
    const NormMap a = tile_norms(input<float>(Input::Algebraic, s.m, s.k, seed), 32);
    const NormMap b = tile_norms(input<float>(Input::Algebraic, s.k, s.n, seed + 1), 32);
    const auto at = [&](double tau) { return spamm_selection(a, b, tau); };
    SpammOptions o;
    o.tile = 32;
    o.variant = "simt";
    o.max_search_iterations = target.iterations;
    plan::TauSearch cpu;
    if (target.share > 0) {
      o.valid_ratio = target.share;
      cpu = plan::search_tau_for_ratio(*o.valid_ratio, o.ratio_tolerance, o.max_search_iterations, at);
    } else {
      o.max_error = target.error_fraction * at(std::numeric_limits<double>::max()).error_bound;
      cpu = plan::search_tau_for_error(*o.max_error, o.max_search_iterations, at);
    }
    const SpammInfo info = check_call<float>(rt(), s, Input::Algebraic, o, seed);
    const std::string what = "share " + std::to_string(target.share) + " error " + std::to_string(target.error_fraction) +
                             " iterations " + std::to_string(target.iterations);
    EXPECT_NEAR(info.tau, cpu.tau, 1e-9 * cpu.tau) << what;
    EXPECT_EQ(info.search_iterations, cpu.iterations) << what;
    EXPECT_EQ(info.valid_products, cpu.selection.valid) << what;
    EXPECT_NEAR(info.error_bound, cpu.selection.error_bound, 1e-9 * (1 + cpu.selection.error_bound)) << what;
  }
}

TEST_F(SpammGpu, ErrorTargetKeepsTheBoundUnderIt) {
  SpammOptions all;
  all.tau = 1e300;  // skips everything: the bound is the largest possible
  const SpammInfo none = check_call<float>(rt(), {256, 256, 256}, Input::Exponential, all, next_seed());
  EXPECT_EQ(none.valid_products, 0);
  for (double share : {0.01, 0.1}) {
    SpammOptions o;
    o.max_error = none.error_bound * share;
    const SpammInfo info = check_call<float>(rt(), {256, 256, 256}, Input::Exponential, o, next_seed());
    EXPECT_LE(info.error_bound, *o.max_error);
    EXPECT_GT(info.valid_products, 0);
    EXPECT_LT(info.valid_products, info.tile_products);
  }
}

TEST_F(SpammGpu, TauZeroIsTheExactProductAndEarlyLaunchOffRuns) {
  SpammOptions o;
  o.early_launch = false;
  for (const char* variant : {"simt", "mma"}) {
    o.variant = variant;
    const SpammInfo info = check_call<float>(rt(), {96, 80, 72}, Input::NearSparse, o, next_seed());
    EXPECT_EQ(info.valid_products, info.tile_products);
    EXPECT_EQ(info.error_bound, 0);
    EXPECT_EQ(info.search_iterations, 0);
  }
}

TEST_F(SpammGpu, EmptyInnerDimensionGivesZeros) {
  DeviceDense<float> a(rt().context(), 40, 0), b(rt().context(), 0, 30), c(rt().context(), 40, 30);
  c.buffer().fill_bytes(0xFF);
  const SpammInfo info = rt().spamm(a, b, c);
  EXPECT_EQ(info.tile_products, 0);
  for (float v : c.download().data) ASSERT_EQ(v, 0.0f);
}

TEST_F(SpammGpu, BadCallsFailBeforeCIsWritten) {
  DeviceDense<float> a(rt().context(), 64, 48), b(rt().context(), 40, 32), c(rt().context(), 64, 32);
  c.buffer().fill_bytes(0xFF);
  const auto expect_untouched = [&] {
    for (float v : c.download().data) ASSERT_TRUE(test::is_poison(v));
  };
  try {
    rt().spamm(a, b, c);
    ADD_FAILURE() << "mismatched shapes ran";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("A is 64x48 but B has 40 rows"), std::string::npos) << e.what();
  }
  expect_untouched();
  DeviceDense<float> b2(rt().context(), 48, 32);
  SpammOptions o;
  o.valid_ratio = 2.0;
  EXPECT_THROW(rt().spamm(a, b2, c, o), InvalidInputError);
  o = {};
  o.tile = 100;
  EXPECT_THROW(rt().spamm(a, b2, c, o), InvalidInputError);
  DeviceDense<float> wrong_c(rt().context(), 64, 31);
  EXPECT_THROW(rt().spamm(a, b2, wrong_c), InvalidInputError);
  expect_untouched();
  DeviceDense<double> da(rt().context(), 8, 8), db(rt().context(), 8, 8), dc(rt().context(), 8, 8);
  o = {};
  o.precision = SpammPrecision::FP16;
  EXPECT_THROW(rt().spamm(da, db, dc, o), UnsupportedError);
}

TEST_F(SpammGpu, ACallersStreamAndARepeatedPlan) {
  Stream stream(rt().context());
  SpammOptions o;
  o.stream = stream.handle();
  o.tau = 0.0;
  const Shape s{128, 128, 128};
  const uint64_t seed = next_seed();
  const SpammInfo first = check_call<float>(rt(), s, Input::Exponential, o, seed);
  const SpammInfo second = check_call<float>(rt(), s, Input::Exponential, o, seed + 7);
  EXPECT_EQ(first.decision->variant, second.decision->variant);
  EXPECT_EQ(second.decision->kernel_origin == KernelOrigin::None || second.decision->kernel_origin == KernelOrigin::Memory, true);
}

// f16/bf16 operands handed over as they are (H is half or bfloat16; C is f32): read in place
// when k, n and the leading dimensions are multiples of 8, else through the executor's padded
// copies. Checked against reference::spamm on the same 16-bit values widened to f32 (exact),
// so only the f32 accumulation's order differs; the selection against the CPU's on them.
template <class H>
SpammInfo check_sixteen(Runtime& rt, const Shape& s, Input kind, const SpammOptions& o, uint64_t seed) {
  const std::string what = std::string(to_string(dtype_of<H>::value)) + " operands " + label(o, s, kind, seed);
  const Dense<H> a = input<H>(kind, s.m, s.k, seed), b = input<H>(kind, s.k, s.n, seed + 1);
  DeviceDense<H> da(rt.context(), s.m, s.k, s.k + s.pad), db(rt.context(), s.k, s.n, s.n + s.pad);
  DeviceDense<float> dc(rt.context(), s.m, s.n, s.n + s.pad);
  da.upload(a);
  db.upload(b);
  dc.buffer().fill_bytes(0xFF);
  const SpammInfo info = rt.spamm(da, db, dc, o);
  const Dense<float> got = dc.download();
  test::expect_all_written(got.data, what);
  const Decision& d = *info.decision;
  if (!o.variant.empty()) {
    EXPECT_EQ(d.variant, o.variant) << what;
  }
  const std::string precision = std::is_same_v<H, half> ? "fp16" : "bf16";
  EXPECT_EQ(d.features.at("precision"), precision) << what;
  const Dense<float> af = cast<float>(a), bf = cast<float>(b);
  const SpammSelection cpu = spamm_selection(tile_norms(af, info.tile), tile_norms(bf, info.tile), info.tau);
  EXPECT_EQ(info.valid_products, cpu.valid) << what;
  EXPECT_NEAR(info.error_bound, cpu.error_bound, 1e-9 * (1 + cpu.error_bound)) << what;
  Dense<float> want;
  reference::spamm(af, bf, want, info.tile, info.tau);
  EXPECT_LE(test::relative_error(test::as_double(got.data), test::as_double(want.data)), 1e-4) << what << "\n" << describe(d);
  Dense<double> exact;
  reference::spamm(cast<double>(af), cast<double>(bf), exact, info.tile, 0.0);
  const std::vector<double> exact_values = test::as_double(exact.data);
  EXPECT_LE(frobenius_difference(test::as_double(got.data), exact_values), info.error_bound + 1e-4 * frobenius(exact_values)) << what;
  return info;
}

template <class H>
void sixteen_bit_paths(Runtime& rt, uint64_t seed) {
  // In place (multiples of 8) and through copies (k = 150; a padded leading dimension of 3).
  for (const Shape& s : {Shape{256, 192, 320}, Shape{200, 150, 104}, Shape{128, 128, 128, 3}})
    for (const char* variant : {"", "mma", "cublas"}) {
      SpammOptions o;
      o.variant = variant;
      o.tile = 32;
      o.tau = fifth_tau<H>(Input::Algebraic, s, 32, seed);
      expect_fifth_or_everything(check_sixteen<H>(rt, s, Input::Algebraic, o, seed));
      ++seed;
    }
  if (rt.context().info().sm != 90) return;
  // wgmma (tile 64 only): in place, through copies, and edge groups whose second tile row or
  // column lies outside C (3 x 3 tiles, partial).
  for (const Shape& s : {Shape{256, 192, 320}, Shape{200, 150, 104}, Shape{160, 136, 168, 3}}) {
    SpammOptions o;
    o.variant = "wgmma";
    o.tile = 64;
    o.tau = fifth_tau<H>(Input::Algebraic, s, 64, seed);
    expect_fifth_or_everything(check_sixteen<H>(rt, s, Input::Algebraic, o, seed));
    ++seed;
  }
}

TEST_F(SpammGpu, HalfOperandsAsTheyAreAndThroughCopies) { sixteen_bit_paths<half>(rt(), next_seed()); }
TEST_F(SpammGpu, Bfloat16OperandsAsTheyAreAndThroughCopies) { sixteen_bit_paths<bfloat16>(rt(), next_seed()); }

TEST_F(SpammGpu, SixteenBitOperandsRefuseAnotherPrecision) {
  DeviceDense<half> a(rt().context(), 16, 16), b(rt().context(), 16, 16);
  DeviceDense<float> c(rt().context(), 16, 16);
  SpammOptions o;
  o.precision = SpammPrecision::BF16;
  try {
    rt().spamm(a, b, c, o);
    ADD_FAILURE() << "bf16 precision on half operands ran";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("f16 operands compute in precision fp16, not bf16"), std::string::npos) << e.what();
  }
}

// B is A itself (the same device matrix): one norm pass whose map (and 16-bit copy) serves
// both; every path (tiles 32 and 64: wgmma's) against the reference of A·A.
TEST_F(SpammGpu, BIsAItselfTakesOneNormPass) {
  const int32_t n = 200;
  for (const int32_t tile : {32, 64})
  for (SpammOptions o : every_path(DType::F32, tile, rt().context().info().sm)) {
    const uint64_t seed = next_seed();
    const Dense<float> a = input<float>(Input::Exponential, n, n, seed);
    DeviceDense<float> da(rt().context(), n, n), dc(rt().context(), n, n);
    da.upload(a);
    dc.buffer().fill_bytes(0xFF);
    o.tile = tile;
    o.valid_ratio = 0.2;
    const SpammInfo info = rt().spamm(da, da, dc, o);
    const std::string what = label(o, {n, n, n}, Input::Exponential, seed);
    const Dense<float> got = dc.download();
    for (float v : got.data) ASSERT_FALSE(test::is_poison(v)) << what;
    const NormMap norms = tile_norms(a, tile);
    const SpammSelection cpu = spamm_selection(norms, norms, info.tau);
    EXPECT_EQ(info.valid_products, cpu.valid) << what;
    EXPECT_NEAR(info.error_bound, cpu.error_bound, 1e-9 * (1 + cpu.error_bound)) << what;
    Dense<float> want;
    reference::spamm(a, a, want, tile, info.tau);
    EXPECT_LE(test::relative_error(test::as_double(got.data), test::as_double(want.data)), tolerance<float>(o.precision))
        << what << "\n" << describe(*info.decision);
  }
}

// A target share the model sends to cuBLAS (50% at N = 1024, over the tf32 and fp16
// crossovers there), and a forced cublas with a share: the GEMM runs without norms or search
// and the call reports what it computed, every product (τ = 0, share 1, bound 0; check_call
// holds C to the exact product within rounding), the share asked in the Decision. Also on a
// caller's stream and with 16-bit operands.
TEST_F(SpammGpu, ATargetShareForCublasMultipliesEverythingWithoutASearch) {
  Stream stream(rt().context());
  for (SpammPrecision precision : {SpammPrecision::TF32, SpammPrecision::FP16}) {
    for (const char* variant : {"", "cublas"}) {
      SpammOptions o;
      o.precision = precision;
      o.variant = variant;
      o.valid_ratio = 0.5;
      o.stream = stream.handle();
      const SpammInfo info = check_call<float>(rt(), {1024, 1024, 1024}, Input::Algebraic, o, next_seed());
      EXPECT_EQ(info.decision->variant, "cublas") << to_string(precision) << " " << variant << "\n" << describe(*info.decision);
      EXPECT_TRUE(info.decision->features.value("decided_before_norms", false)) << describe(*info.decision);
      EXPECT_EQ(info.decision->features.value("asked_share", 0.0), 0.5);
      EXPECT_EQ(info.search_iterations, 0);
      EXPECT_EQ(info.tau, 0.0);
      EXPECT_EQ(info.valid_ratio, 1.0);
      EXPECT_EQ(info.valid_products, info.tile_products);
      EXPECT_EQ(info.error_bound, 0.0);
    }
  }
  SpammOptions o;
  o.valid_ratio = 0.5;
  const SpammInfo info = check_sixteen<half>(rt(), {1024, 1024, 1024}, Input::Algebraic, o, next_seed());
  EXPECT_EQ(info.decision->variant, "cublas") << describe(*info.decision);
  EXPECT_TRUE(info.decision->features.value("decided_before_norms", false));
  EXPECT_EQ(info.valid_ratio, 1.0);
}

// τ = 0 (no τ, share or bound asked) keeps every product: where the model prices cuBLAS under
// the tile kernels at share 1 (tf32 here), the call multiplies everything without a norm pass.
TEST_F(SpammGpu, TauZeroGoesToCublasWithoutNorms) {
  SpammOptions o;
  o.precision = SpammPrecision::TF32;
  const SpammInfo info = check_call<float>(rt(), {1024, 512, 1024}, Input::Exponential, o, next_seed());
  const Decision& d = *info.decision;
  EXPECT_EQ(d.variant, "cublas") << describe(d);
  EXPECT_TRUE(d.features.value("decided_before_norms", false)) << describe(d);
  EXPECT_FALSE(d.features.contains("asked_share")) << describe(d);
  EXPECT_EQ(info.valid_ratio, 1.0);
  EXPECT_EQ(info.error_bound, 0.0);
  EXPECT_EQ(info.search_iterations, 0);
}

// With τ > 0 given, a choice of cuBLAS is remembered for the same buffers, τ and problem: the
// next calls skip the norms (decided_before_norms, remembered_calls 1, 2, ...), every 8th call
// (ops/spamm.cpp's kRecheckEvery) measures the share again, and another τ measures at once.
// C is the exact product each time (poisoned first).
// f32 algebraic-decay A and B on the device, C to write, and the exact product (tile 64).
struct DecayProduct {
  DecayProduct(Runtime& rt, const Shape& s, uint64_t seed)
      : a(input<float>(Input::Algebraic, s.m, s.k, seed)), b(input<float>(Input::Algebraic, s.k, s.n, seed + 1)),
        da(rt.context(), s.m, s.k), db(rt.context(), s.k, s.n), dc(rt.context(), s.m, s.n) {
    da.upload(a);
    db.upload(b);
    reference::spamm(cast<double>(a), cast<double>(b), exact, 64, 0.0);
  }
  Dense<float> a, b;
  DeviceDense<float> da, db, dc;
  Dense<double> exact;
};

TEST_F(SpammGpu, ACublasChoiceWithTauGivenIsRememberedAndRechecked) {
  DecayProduct product(rt(), {1024, 512, 1024}, next_seed());
  DeviceDense<float>&da = product.da, &db = product.db, &dc = product.dc;
  const Dense<double>& exact = product.exact;
  SpammOptions o;
  o.precision = SpammPrecision::TF32;  // cuBLAS under the tile kernels at this size, whatever the share
  o.tau = 1e-300;
  // The model may call it close (ops::kCloseCall): then the first calls time both sides and
  // cuBLAS, the faster at every product kept, is remembered from the verdict on.
  std::vector<int> measured;
  int first = -1;  // the first call that took cuBLAS from the memory
  const int comparing = 4 * ops::kSamples + 4;  // calls the comparison may take at most
  for (int call = 0; first < 0 ? call < comparing : call < first + 2 * ops::kRecheckEvery; ++call) {
    dc.buffer().fill_bytes(0xFF);
    const SpammInfo info = rt().spamm(da, db, dc, o);
    const Decision& d = *info.decision;
    const bool remembered = d.features.contains("remembered_calls");
    if (remembered && first < 0) first = call;
    if (first < 0) continue;  // still comparing
    ASSERT_EQ(d.variant, "cublas") << "call " << call << "\n" << describe(d);
    EXPECT_EQ(info.valid_ratio, 1.0);
    if (remembered) {
      EXPECT_TRUE(d.features.value("decided_before_norms", false));
      EXPECT_EQ(d.features.at("remembered_calls").get<int>(), measured.empty() ? call - first + 1 : call - measured.back()) << call;
    } else {
      measured.push_back(call);
    }
    if (call % 4 == 1) {
      const Dense<float> got = dc.download();
      EXPECT_LE(test::relative_error(test::as_double(got.data), test::as_double(exact.data)), tolerance<float>(o.precision)) << call;
    }
  }
  ASSERT_GE(first, 0) << "no call took cuBLAS from the memory";
  EXPECT_EQ(measured, (std::vector<int>{first + ops::kRecheckEvery - 1, first + 2 * ops::kRecheckEvery - 1}))
      << "first remembered call " << first;
  o.tau = 2e-300;
  EXPECT_FALSE(rt().spamm(da, db, dc, o).decision->features.contains("remembered_calls"));
}

// A close call (the model's prices of the best tile kernel and cuBLAS within kCloseCall) with τ
// given is timed: kSamples calls of each side on the same operands and τ, then the faster is
// followed (source Measured, both sides' times on their candidates). New values under the same
// buffers that move the share at τ send the choice back to the model. Every call's C (poisoned
// first) is within the reported bound of the exact product.
TEST_F(SpammGpu, ACloseCallWithTauGivenIsTimedAndTheFasterSideFollowed) {
  const Shape s{2048, 2048, 2048};
  DecayProduct product(rt(), s, next_seed());
  DeviceDense<float>&da = product.da, &db = product.db, &dc = product.dc;
  const Dense<float>&a = product.a, &b = product.b;
  Dense<double>& exact = product.exact;
  const std::vector<double> exact_values = test::as_double(exact.data);
  SpammOptions o;
  o.precision = SpammPrecision::TF32;
  o.tile = 64;
  const auto call = [&](const char* when) {
    dc.buffer().fill_bytes(0xFF);
    const SpammInfo info = rt().spamm(da, db, dc, o);
    const double measured = frobenius_difference(test::as_double(dc.download().data), exact_values);
    EXPECT_LE(measured, info.error_bound + 2 * tolerance<float>(o.precision) * frobenius(exact_values)) << when;
    return info;
  };
  const auto candidate = [](const Decision& d, bool vendor) -> const Candidate* {
    const Candidate* best = nullptr;
    for (const Candidate& c : d.candidates)
      if (c.rejected_because.empty() && variants::SpammRegistry::find(c.variant)->traits.vendor == vendor &&
          (!best || c.predicted_ms < best->predicted_ms))
        best = &c;
    return best;
  };

  // The τ of the first share, from 2% kept up, whose call the model priced as a close call.
  const NormMap na = tile_norms(a, 64), nb = tile_norms(b, 64);
  std::vector<double> products;
  for (int32_t i = 0; i < na.tile_rows; ++i)
    for (int32_t k = 0; k < na.tile_cols; ++k)
      for (int32_t j = 0; j < nb.tile_cols; ++j) products.push_back(na.at(i, k) * nb.at(k, j));
  std::sort(products.begin(), products.end());
  bool close = false;
  for (double kept : {0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5}) {
    o.tau = products[std::size_t((1 - kept) * double(products.size()))];
    const Decision d = *call("finding a close call").decision;
    const Candidate *tile = candidate(d, false), *vendor = candidate(d, true);
    ASSERT_TRUE(tile && vendor) << describe(d);
    close = std::max(tile->predicted_ms, vendor->predicted_ms) < ops::kCloseCall * std::min(tile->predicted_ms, vendor->predicted_ms);
    if (close) {
      EXPECT_TRUE(d.features.value("timed_for_choice", false)) << describe(d);
      break;
    }
  }
  ASSERT_TRUE(close) << "no share from 2% to 50% is a close call for the model at " << s.m << "^3 tf32";

  std::optional<Decision> measured;
  for (int n = 0; n < 4 * ops::kSamples + 4 && !measured; ++n) {
    const SpammInfo info = call("comparing");
    if (info.decision->source == DecisionSource::Measured) measured = *info.decision;
  }
  ASSERT_TRUE(measured) << "no call followed the timed comparison";
  const Candidate *tile = candidate(*measured, false), *vendor = candidate(*measured, true);
  ASSERT_GT(tile->measured_ms, 0) << describe(*measured);
  ASSERT_GT(vendor->measured_ms, 0) << describe(*measured);
  EXPECT_EQ(measured->variant, vendor->measured_ms <= tile->measured_ms ? vendor->variant : tile->variant) << describe(*measured);
  for (int n = 0; n < 3; ++n) EXPECT_EQ(call("following").decision->source, DecisionSource::Measured);

  // Twice A's values: every norm product doubles and many more pass τ.
  Dense<float> doubled = a;
  for (float& v : doubled.data) v *= 2;
  da.upload(doubled);
  reference::spamm(cast<double>(doubled), cast<double>(b), exact, 64, 0.0);
  const std::vector<double> doubled_exact = test::as_double(exact.data);
  bool back_to_model = false;
  for (int n = 0; n <= ops::kRecheckEvery && !back_to_model; ++n) {
    dc.buffer().fill_bytes(0xFF);
    const SpammInfo info = rt().spamm(da, db, dc, o);
    const double error = frobenius_difference(test::as_double(dc.download().data), doubled_exact);
    EXPECT_LE(error, info.error_bound + 2 * tolerance<float>(o.precision) * frobenius(doubled_exact)) << "after the values changed";
    back_to_model = info.decision->source == DecisionSource::Model;
  }
  EXPECT_TRUE(back_to_model) << "the choice measured at the old share outlived a share that moved";
}

// The CLI on the device: `run --op spamm --check` and a small `bench --op spamm` subset, every
// JSON line parsed: one per (precision, share, path) that runs, the measured error within the
// bound plus rounding, the kept share near its target.
TEST_F(SpammGpu, CliRunAndBenchOnASmallSubset) {
  const test::CliResult run = test::run_cli("run exponential:384 --op spamm --valid-ratio 0.2 --check --repeat 2");
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("check passed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("cuBLAS SGEMM"), std::string::npos) << run.out;
  const std::filesystem::path lines = test::fresh_dir("spamm_bench") / "records.jsonl";
  const test::CliResult bench = test::run_cli(
      "bench --op spamm --sizes 512 --decays exponential --ratios 10,50 --precisions full,fp16 --paths auto,simt,mma,cublas "
      "--repeat 2 --warmup 1 --json-out '" + lines.string() + "'");
  ASSERT_EQ(bench.status, 0) << bench.out;
  int records = 0;
  std::ifstream in(lines);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    ++records;
    const std::string what = line.substr(0, 200);
    EXPECT_GT(r.at("ms").get<double>(), 0) << what;
    EXPECT_GT(r.at("baseline_ms").get<double>(), 0) << what;
    const double rounding = r.at("precision") == "full" ? 1e-4 : 1e-2;
    EXPECT_LE(r.at("relative_error").get<double>(), r.at("relative_bound").get<double>() + rounding) << what;
    // A Toeplitz input's norm products come in ties: the share moves in steps, so only near the target.
    EXPECT_NEAR(r.at("valid_ratio").get<double>(), r.at("target_ratio").get<double>(), 0.3 * r.at("target_ratio").get<double>()) << what;
    const double computed = r.at("computed_share").get<double>();
    const bool everything = variants::SpammRegistry::find(r.at("variant").get<std::string>())->traits.vendor;
    EXPECT_EQ(computed, everything ? 1.0 : r.at("valid_ratio").get<double>()) << what;
  }
  // 2 shares x (full: auto, simt, mma, cublas; fp16: auto, mma, cublas; simt does not compute fp16)
  EXPECT_EQ(records, 2 * (4 + 3)) << bench.out;
}

}  // namespace
}  // namespace sparsejit
