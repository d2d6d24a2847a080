// The fitting of `sparsejit tune --op spamm` (pure CPU; the CLI's tools/cli/tune_spamm.cpp
// times the calls on the device and hands them in).
//
// What is timed, per precision and size N (an N×N decay input): each tile variant forced at a
// given τ for several kept shares (the whole call: the norm pass, one selection and the
// kernel), and the vendor's GEMM of the same precision class alone. What is fitted keeps the
// shape of models/spamm.json, so the variants' cost_terms price the tuned model as they price
// the shipped one:
//   tile variants  ms - front - launch ≈ Σ coefficient · term over the terms that are non-zero
//                  in some timing (c_tiles, and the per-flop rate of each rate class timed:
//                  mma_f16_flops, ...). front is the norm pass and one selection, priced by the
//                  base model's norm_bytes, search_steps and search_tile_products (front_terms):
//                  every path pays it at a given τ, the model leaves it out of a variant's own
//                  cost, and it grows with N² like c_tiles, so the two cannot be told apart from
//                  these timings. launch stays the base model's for the same reason (a few µs,
//                  constant like the intercept at one size).
//   vendor         ms - launch ≈ Σ coefficient · term (gemm_<class>_flops of each class timed).
// Each is the non-negative least-squares fit in relative error of tuner/cost_fit.hpp (Σ
// ((predicted - t) / t)²: the times span 0.05 to 20 ms and the planner compares ratios), the
// front passed as its rows' front. Coefficients of terms no timing exercises (a precision not
// timed, the search's) stay the base model's. A variant with fewer timings than terms to fit
// keeps its base coefficients (a note says so).
//
// The crossover of a precision and size: the kept share where the tile call (the fastest tile
// variant at each share timed) takes as long as the vendor's GEMM, linear between the two
// timed shares around the first share where the tile call is the slower one; "below" the
// smallest share timed when it is already slower there, "above" the largest when it is faster
// at every share timed. Computed from the times measured and, the same way, from the fitted
// model's predictions of them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/spamm.hpp"

namespace sparsejit::tuner {

// One tile variant's call at a share.
struct SpammTileTime {
  std::string variant;
  nlohmann::json terms = nlohmann::json::object();  // its cost terms for the call (the Decision's candidate)
  double ms = 0;                                     // the whole call, device ms
};

// The calls at one τ: the same kept share for every tile variant.
struct SpammShareTimes {
  double share = 0;                                  // kept share of tile products at that τ
  nlohmann::json front = nlohmann::json::object();   // front_terms(problem, 1)
  std::vector<SpammTileTime> tiles;
};

// One precision and size: the vendor's GEMM and the tile calls at each share.
struct SpammCaseTimes {
  SpammPrecision precision = SpammPrecision::Full;
  int32_t n = 0;
  std::string vendor;                                      // the vendor variant's name
  nlohmann::json vendor_terms = nlohmann::json::object();  // its cost terms (a launch, the dense flops)
  double vendor_ms = 0;
  std::vector<SpammShareTimes> shares;  // ascending share
};

// Where the tile call meets the GEMM.
struct CrossoverShare {
  enum class Where { Between, Below, Above };
  Where where = Where::Between;
  double share = 0;  // Between: the interpolated share; Below: the smallest share timed; Above: the largest
};

// `times`: (share, ms) in ascending share; `level`: the GEMM's ms. Nothing timed is an
// InvalidInputError.
CrossoverShare crossover_share(const std::vector<std::pair<double, double>>& times, double level);
// "12.3%", "<1%", ">50%".
std::string to_string(const CrossoverShare& share);

struct SpammCrossover {
  SpammPrecision precision = SpammPrecision::Full;
  int32_t n = 0;
  CrossoverShare measured, modelled;
  std::vector<std::string> fastest;  // the tile variants fastest at some share timed
};

struct SpammFit {
  nlohmann::json cost;                // base_cost with the fitted coefficients
  std::vector<std::string> fitted;    // "<variant> <term>" of every coefficient fitted
  std::vector<std::string> notes;     // one line per variant: what was fitted, on what, how well
  std::vector<SpammCrossover> crossovers;  // per case, in the order given
};

// base_cost: the "cost" section of the model the planner used (shipped or tuned before). A
// timing that is not positive and finite, or of a variant base_cost has no entry for, is an
// InvalidInputError naming it.
SpammFit fit_spamm(const std::vector<SpammCaseTimes>& cases, const nlohmann::json& base_cost);

// The tuned model: `base` with the fitted "cost", the tuned id of `device_name`, version "1",
// and a description naming what was timed.
nlohmann::json tuned_spamm_model(const nlohmann::json& base, const SpammFit& fit, const std::vector<SpammCaseTimes>& cases,
                                 const std::string& device_name);

}  // namespace sparsejit::tuner
