// SpAMM's planning without a GPU: the option checks (each bad value named), the tile, the
// selection and its error bound against independent computations (reference::spamm's measured
// error, valid_ratio's count, the norm matrices' product), the τ searches on random norm maps,
// and the variant choice over the registry with the shipped model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>

#include "models/model_store.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/plan_support.hpp"
#include "variants/catalog.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit {
namespace {

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_invalid(const SpammOptions& o, const std::string& needle, DType dtype = DType::F32) {
  const std::string message = message_of([&] { plan::check_spamm_options(o, dtype); });
  EXPECT_NE(message.find(needle), std::string::npos) << "'" << message << "' lacks '" << needle << "'";
}

TEST(SpammOptions, EachBadValueIsNamed) {
  SpammOptions o;
  o.tau = 1.0;
  o.valid_ratio = 0.1;
  expect_invalid(o, "at most one of tau, valid_ratio and max_error (2 are set)");
  o = {};
  o.tau = -1.0;
  expect_invalid(o, "tau = -1 must be finite");
  o.tau = std::nan("");
  expect_invalid(o, "tau = nan");
  o = {};
  o.valid_ratio = 1.5;
  expect_invalid(o, "valid_ratio = 1.5 must be in (0, 1]");
  o.valid_ratio = 0.0;
  expect_invalid(o, "valid_ratio = 0 must be in (0, 1]");
  o = {};
  o.max_error = INFINITY;
  expect_invalid(o, "max_error = inf");
  o = {};
  o.ratio_tolerance = 0;
  expect_invalid(o, "ratio_tolerance = 0");
  o = {};
  o.max_search_iterations = 0;
  expect_invalid(o, "max_search_iterations = 0 must be in [1, 200]");
  o = {};
  o.tile = 48;
  expect_invalid(o, "tile = 48 is not one the kernels are built for");
  o = {};
  o.precision = SpammPrecision::TF32;
  EXPECT_THROW(plan::check_spamm_options(o, DType::F64), UnsupportedError);
  expect_invalid(o, "precision tf32 is for f32 operands", DType::F64);
  EXPECT_THROW(plan::check_spamm_options({}, DType::F16), UnsupportedError);
  EXPECT_NO_THROW(plan::check_spamm_options(o, DType::F32));
}

TEST(SpammOptions, PrecisionNamesRoundTrip) {
  for (SpammPrecision p : {SpammPrecision::Full, SpammPrecision::TF32, SpammPrecision::FP16, SpammPrecision::BF16})
    EXPECT_EQ(parse_spamm_precision(to_string(p)), p);
  EXPECT_NE(message_of([] { parse_spamm_precision("fp8"); }).find("'fp8'"), std::string::npos);
}

TEST(SpammTile, ForcedElsePlannedBySize) {
  SpammOptions o;
  EXPECT_EQ(plan::spamm_tile(8192, 8192, 8192, o), 64);
  EXPECT_EQ(plan::spamm_tile(300, 200, 100, o), 32);
  o.tile = 128;
  EXPECT_EQ(plan::spamm_tile(300, 200, 100, o), 128);
}

// A decay pair with random signs and magnitudes perturbed, so norms differ tile by tile.
Dense<double> decay(int32_t rows, int32_t cols, uint64_t seed) {
  Dense<double> d = generate::algebraic_decay(rows, cols, 1.0, 0.8, generate::DecaySigns::Random, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.5, 1.5);
  for (double& v : d.data) v *= scale(rng);
  return d;
}

double frobenius_difference(const Dense<double>& x, const Dense<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < x.data.size(); ++i) s += (x.data[i] - y.data[i]) * (x.data[i] - y.data[i]);
  return std::sqrt(s);
}

TEST(SpammSelection, CountsAsValidRatioAndBoundsTheReferenceError) {
  const Dense<double> a = decay(150, 97, 1), b = decay(97, 70, 2);
  const int tile = 16;
  const NormMap na = tile_norms(a, tile), nb = tile_norms(b, tile);
  Dense<double> exact;
  reference::spamm(a, b, exact, tile, 0.0);
  const SpammSelection all = spamm_selection(na, nb, 0.0);
  for (double fraction : {0.9, 0.5, 0.2, 0.05}) {
    const double tau = all.max_product * fraction * fraction;
    const SpammSelection s = spamm_selection(na, nb, tau);
    EXPECT_EQ(s.triples, int64_t(na.tile_rows) * na.tile_cols * nb.tile_cols);
    EXPECT_DOUBLE_EQ(s.ratio, valid_ratio(na, nb, tau)) << tau;
    Dense<double> approx;
    reference::spamm(a, b, approx, tile, tau);
    const double error = frobenius_difference(approx, exact);
    EXPECT_LE(error, s.error_bound * (1 + 1e-12)) << tau;
    EXPECT_GT(error, 0) << tau;  // something was skipped
  }
}

TEST(SpammSelection, BoundOfSkippingEverythingIsTheNormMatricesProduct) {
  const Dense<double> a = decay(64, 80, 3), b = decay(80, 48, 4);
  const NormMap na = tile_norms(a, 16), nb = tile_norms(b, 16);
  const SpammSelection none = spamm_selection(na, nb, INFINITY);
  // ||N_A · N_B||F with N_A, N_B the norm maps as matrices.
  Dense<double> ma(na.tile_rows, na.tile_cols), mb(nb.tile_rows, nb.tile_cols), product;
  ma.data = na.norms;
  mb.data = nb.norms;
  reference::spamm(ma, mb, product, 1, 0.0);
  double squares = 0;
  for (double v : product.data) squares += v * v;
  EXPECT_EQ(none.valid, 0);
  EXPECT_NEAR(none.error_bound, std::sqrt(squares), 1e-12 * std::sqrt(squares));
  EXPECT_EQ(spamm_selection(na, nb, 0.0).error_bound, 0.0);
  EXPECT_EQ(spamm_selection(na, nb, 0.0).valid, none.triples);
}

// Random norm maps (tiles x tiles, log-uniform over six decades) and an evaluator counting calls.
struct RandomMaps {
  NormMap a, b;
  int evaluations = 0;
  explicit RandomMaps(int tiles, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> exponent(-3, 3);
    for (NormMap* m : {&a, &b}) {
      m->tile = 8;
      m->tile_rows = m->tile_cols = tiles;
      for (int i = 0; i < tiles * tiles; ++i) m->norms.push_back(std::pow(10.0, exponent(rng)));
    }
  }
  plan::SelectionAt at() {
    return [this](double tau) {
      ++evaluations;
      return spamm_selection(a, b, tau);
    };
  }
};

TEST(SpammTauSearch, ReachesTheTargetShareWithinTolerance) {
  for (double target : {0.01, 0.05, 0.25, 0.5}) {
    RandomMaps maps(24, uint64_t(target * 1000));
    const plan::TauSearch found = plan::search_tau_for_ratio(target, 0.01, 40, maps.at());
    EXPECT_NEAR(found.selection.ratio, target, 0.01 * target) << target;
    EXPECT_EQ(found.iterations, maps.evaluations);
    EXPECT_LE(found.iterations, 40);
    EXPECT_EQ(found.selection.valid, spamm_selection(maps.a, maps.b, found.tau).valid);
  }
}

TEST(SpammTauSearch, StopsAtTheIterationLimitWithTheClosestShare) {
  RandomMaps maps(24, 7);
  const plan::TauSearch found = plan::search_tau_for_ratio(0.1, 1e-9, 5, maps.at());
  EXPECT_EQ(found.iterations, 5);
  EXPECT_EQ(maps.evaluations, 5);
  EXPECT_GT(found.tau, 0);
}

TEST(SpammTauSearch, AFullShareKeepsEverything) {
  RandomMaps maps(10, 8);
  const plan::TauSearch found = plan::search_tau_for_ratio(1.0, 0.01, 40, maps.at());
  EXPECT_EQ(found.tau, 0.0);
  EXPECT_EQ(found.selection.ratio, 1.0);
  EXPECT_EQ(found.iterations, 1);
}

TEST(SpammTauSearch, ErrorTargetGivesTheLargestTauUnderIt) {
  RandomMaps maps(20, 9);
  const double everything = spamm_selection(maps.a, maps.b, INFINITY).error_bound;
  for (double share : {1e-4, 1e-2, 0.3}) {
    const double max_error = everything * share;
    const plan::TauSearch found = plan::search_tau_for_error(max_error, 60, maps.at());
    EXPECT_LE(found.selection.error_bound, max_error) << share;
    EXPECT_GT(spamm_selection(maps.a, maps.b, found.tau * (1 + 1e-6)).error_bound, max_error) << share;
  }
  // A target above the bound of skipping every product skips every product.
  const plan::TauSearch all = plan::search_tau_for_error(everything * 2, 60, maps.at());
  EXPECT_EQ(all.selection.valid, 0);
}

plan::SpammFeatures features_at(double ratio, const plan::SpammProblem& p) {
  plan::SpammFeatures f;
  f.selection.triples = int64_t(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  f.selection.valid = int64_t(std::llround(ratio * double(f.selection.triples)));
  f.selection.ratio = ratio;
  f.selection.error_bound = 0.5;
  f.tau = 1.25;
  return f;
}

plan::SpammProblem square(int32_t n, DType dtype, SpammPrecision precision) {
  plan::SpammProblem p;
  p.dtype = dtype;
  p.precision = precision;
  p.m = p.k = p.n = n;
  p.lda = p.ldb = p.ldc = n;
  p.tile = 64;
  return p;
}

// The shipped model's crossovers at N = 8192 (models/spamm.json, fitted on the H100): the tile
// kernels below, cuBLAS of the same precision class above; each class keeps its own kernels.
// tf32 and fp16/bf16 cross near 17-22% (not cuSpAMM's 30%), f64 SIMT near 25%, and full f32
// not below 50%: the 3xTF32 products beat SGEMM at every share measured (2.1x at 50%). fp16/bf16 take
// the warpgroup kernel on sm_90 (the default target) and mma.sync on sm_80.
TEST(SpammPlan, SkipsBelowTheCrossoverAndCallsCublasAbove) {
  struct Case {
    DType dtype;
    SpammPrecision precision;
    std::string kernel;
    double below, above;  // shares on each side of the crossover
    std::string above_variant;
    int sm = 90;
  };
  for (const Case& c : {Case{DType::F32, SpammPrecision::Full, "mma", 0.05, 0.5, "mma"},
                        Case{DType::F32, SpammPrecision::TF32, "mma", 0.15, 0.3, "cublas"},
                        Case{DType::F32, SpammPrecision::FP16, "wgmma", 0.15, 0.3, "cublas"},
                        Case{DType::F32, SpammPrecision::BF16, "wgmma", 0.15, 0.3, "cublas"},
                        Case{DType::F32, SpammPrecision::FP16, "mma", 0.15, 0.3, "cublas", 80},
                        Case{DType::F64, SpammPrecision::Full, "simt", 0.05, 0.6, "cublas"}}) {
    const plan::SpammProblem p = square(8192, c.dtype, c.precision);
    const std::string label = std::string(to_string(c.dtype)) + " " + to_string(c.precision) + " sm_" + std::to_string(c.sm);
    plan::DeviceTarget device;
    device.sm = c.sm;
    const Decision low = plan::plan_spamm(features_at(c.below, p), p, device, {});
    EXPECT_EQ(low.variant, c.kernel) << label << "\n" << describe(low);
    EXPECT_EQ(low.source, DecisionSource::Model);
    if (c.sm != 90) {
      EXPECT_NE(test::candidate(low, "wgmma").rejected_because.find("sm_90"), std::string::npos) << describe(low);
    }
    const Decision high = plan::plan_spamm(features_at(c.above, p), p, device, {});
    EXPECT_EQ(high.variant, c.above_variant) << label << "\n" << describe(high);
  }
}

// A share asked, τ still to be searched: a tile variant would pay the norm pass and the search
// (~10 steps on the device) first, cuBLAS decided before the norms neither. At N = 4096 (HGEMM
// ~0.17 ms on the H100) that is worth more than any skipping, at N = 8192 below ~12% it is not;
// with τ given (the norms paid by every variant) the tile kernel keeps the 20% share.
TEST(SpammPlan, AnAskedShareCountsTheSearchAgainstTheTileKernels) {
  const auto asked = [](double share, const plan::SpammProblem& p) {
    plan::SpammFeatures f = features_at(share, p);
    f.tau_to_search = true;
    return f;
  };
  const plan::SpammProblem small = square(4096, DType::F32, SpammPrecision::FP16);
  const plan::SpammProblem large = square(8192, DType::F32, SpammPrecision::FP16);
  EXPECT_EQ(plan::plan_spamm(asked(0.01, small), small, {}, {}).variant, "cublas");
  EXPECT_EQ(plan::plan_spamm(features_at(0.01, small), small, {}, {}).variant, "wgmma");
  const Decision d = plan::plan_spamm(asked(0.01, large), large, {}, {});
  EXPECT_EQ(d.variant, "wgmma") << describe(d);
  EXPECT_EQ(d.features.at("tau_to_search"), true);
  EXPECT_GT(test::candidate(d, "wgmma").terms.at("search_steps").get<double>(), 0.0);
  EXPECT_GT(test::candidate(d, "wgmma").terms.at("search_tile_products").get<double>(), 0.0);
  EXPECT_EQ(plan::plan_spamm(asked(0.2, large), large, {}, {}).variant, "cublas");
  EXPECT_EQ(plan::plan_spamm(features_at(0.2, large), large, {}, {}).variant, "wgmma");
}

TEST(SpammPlan, RecordsTheSelectionAndPrecisionItDecidedFrom) {
  const plan::SpammProblem p = square(4096, DType::F32, SpammPrecision::FP16);
  const Decision d = plan::plan_spamm(features_at(0.1, p), p, {}, {});
  EXPECT_EQ(d.op, Op::SpAMM);
  EXPECT_DOUBLE_EQ(d.features.at("valid_ratio").get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(d.features.at("tau").get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(d.features.at("error_bound").get<double>(), 0.5);
  EXPECT_EQ(d.features.at("precision"), "fp16");
  EXPECT_EQ(d.features.at("tile"), 64);
  // simt computes in the value type only: a reduced precision rejects it, naming the precision.
  EXPECT_NE(test::candidate(d, "simt").rejected_because.find("precision fp16"), std::string::npos);
  EXPECT_EQ(test::candidate(d, "mma").params.at("vec"), 8);  // the converted copies are padded to whole tiles
}

// wgmma runs fp16 and bf16 at tile 64 on sm_90: forced elsewhere, or with stages outside
// [2, 4], it is refused naming the reason.
TEST(SpammPlan, ForcedWgmmaNamesWhatItCannotRun) {
  const auto refusal = [](plan::SpammProblem p, const nlohmann::json& params, int sm) {
    SpammOptions o;
    o.variant = "wgmma";
    o.params = params;
    plan::DeviceTarget device;
    device.sm = sm;
    try {
      plan::plan_spamm(features_at(0.05, p), p, device, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("ran");
  };
  const plan::SpammProblem half = square(2048, DType::F32, SpammPrecision::FP16);
  EXPECT_EQ(refusal(half, nlohmann::json::object(), 90), "ran");
  plan::SpammProblem small_tile = half;
  small_tile.tile = 32;
  EXPECT_NE(refusal(small_tile, nlohmann::json::object(), 90).find("tile 32"), std::string::npos);
  EXPECT_NE(refusal(half, nlohmann::json::object(), 80).find("sm_80"), std::string::npos);
  EXPECT_NE(refusal(square(2048, DType::F32, SpammPrecision::TF32), nlohmann::json::object(), 90).find("tf32"), std::string::npos);
  EXPECT_NE(refusal(half, {{"stages", 5}}, 90).find("stages = 5"), std::string::npos);
}

TEST(SpammPlan, ForcedVariantsAndTheirParameterChecks) {
  plan::SpammProblem p = square(1000, DType::F32, SpammPrecision::Full);
  p.ldb = 1001;  // not a multiple of 4 floats: the copies go one element at a time
  SpammOptions o;
  o.variant = "simt";
  Decision d = plan::plan_spamm(features_at(0.9, p), p, {}, o);
  EXPECT_EQ(d.variant, "simt");
  EXPECT_EQ(d.source, DecisionSource::Forced);
  EXPECT_EQ(d.params.at("vec"), 1);
  o.params = {{"vec", 4}};
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("vec = 4 needs k, n and the leading"),
            std::string::npos);
  o.params = {{"slice", 24}};
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("slice = 24"), std::string::npos);
  o.params = {{"stages", 5}};
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("stages = 5"), std::string::npos);
  o.variant = "mma";
  o.params = {{"slice", 4}};  // under one tf32 mma step
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("slice = 4 must be a multiple of 8"),
            std::string::npos);
  o.params = {{"group", 2}};  // tile 64 only
  plan::SpammProblem small = p;
  small.tile = 32;
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, small), small, {}, o); }).find("group = 2 must be 1, or 2 with tile 64 (the tile is 32)"),
            std::string::npos);
  o.params = {{"group", 3}};
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("group = 3"), std::string::npos);
  o.params = nlohmann::json::object();
  EXPECT_EQ(plan::plan_spamm(features_at(0.1, p), p, {}, o).params.at("group"), 2);  // p's tile is 64
  EXPECT_EQ(plan::plan_spamm(features_at(0.1, small), small, {}, o).params.at("group"), 1);
  plan::DeviceTarget turing;
  turing.sm = 75;
  turing.name = "T4";
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, turing, o); }).find("sm_75"), std::string::npos);
  o.variant = "no_such";
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, {}, o); }).find("no_such"), std::string::npos);
  // f64 on tensor cores is refused as forced, naming the type.
  o.variant = "mma";
  const plan::SpammProblem f64 = square(512, DType::F64, SpammPrecision::Full);
  EXPECT_THROW(plan::plan_spamm(features_at(0.1, f64), f64, {}, o), UnsupportedError);
}

TEST(SpammPlan, SharedMemoryPastTheDeviceIsRefused) {
  const plan::SpammProblem p = square(8192, DType::F64, SpammPrecision::Full);
  SpammOptions o;
  o.variant = "simt";
  o.params = {{"slice", 64}, {"stages", 4}};
  plan::DeviceTarget small;
  small.shared_per_block_optin = 48 * 1024;
  small.name = "small";
  EXPECT_NE(message_of([&] { plan::plan_spamm(features_at(0.1, p), p, small, o); }).find("bytes of shared memory per block"),
            std::string::npos);
}

TEST(SpammRegistry, EveryVariantIsPricedByTheShippedModelAndCublasIsTheVendor) {
  const std::vector<std::string> names = plan::spamm_variants();
  const std::set<std::string> registered(names.begin(), names.end());
  std::set<std::string> priced;
  for (const auto& [name, _] : models::shipped_model("spamm").at("cost").items()) priced.insert(name);
  EXPECT_EQ(priced, registered);
  EXPECT_EQ(variants::vendor_variant(Op::SpAMM), "cublas");
  EXPECT_EQ(parse_op("spamm"), Op::SpAMM);
}

}  // namespace
}  // namespace sparsejit
