// The fitting of `sparsejit tune --op spgemm` (pure CPU; the CLI's tools/cli/tune_spgemm.cpp
// times the calls on the device and hands them in).
//
// What is timed, per case (a square matrix A and a value type): C = A·A with each variant the
// planner offered for it (not rejected in the automatic Decision) forced, the whole call. Each
// timing carries the cost terms that Decision priced the variant with (Candidate::terms).
//
// What is fitted keeps the shape of models/spgemm.json, so the variants' cost_terms price the
// tuned model as they price the shipped one: per variant, ms ≈ Σ coefficient · term, the
// relative-error non-negative least squares of tuner/cost_fit.hpp (launch held at the base
// model's value; SpGEMM has no front). Coefficients of terms no timing exercises (e.g. row_hash's
// global_products when no row was that long) stay the base model's.
//
// How well a model selects: per case with at least two variants timed, its pick is the variant
// it prices cheapest among those timed, a hit when the pick's measured time is within 10% of
// the case's fastest (tuner/from_records.hpp's score_model and kWithinOfBest). Judged on every
// case (the fit on every case against the base model), and on held-out cases: the matrices are
// split as `tune --from-records` splits patterns (split_by_pattern: ordered by a hash of the
// name, every kHoldOutEvery-th held out with both its value types, none with fewer than two
// matrices), the coefficients are fitted again on the others alone, and that fit and the base
// model are judged on the held-out cases. The model stored is the fit on every case.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/types.hpp"
#include "tuner/from_records.hpp"

namespace sparsejit::tuner {

// One variant's call on one case.
struct SpgemmTiming {
  std::string matrix;  // its name; the first word names the pattern for the held-out split
  DType dtype = DType::F32;
  std::string variant;
  nlohmann::json terms = nlohmann::json::object();  // its cost terms (the automatic Decision's candidate)
  double ms = 0;                                     // the whole call, device ms
};

// "<matrix> <dtype>": the timings of one case compare with each other.
std::string case_name(const SpgemmTiming& t);

// A base model's and a fitted model's picks on the same cases.
struct SpgemmSelection {
  PredictionScore base, fitted;
};

struct SpgemmFit {
  nlohmann::json cost;              // base_cost with the coefficients fitted on every case
  std::vector<std::string> fitted;  // "<variant> <term>" of every coefficient fitted
  std::vector<std::string> notes;   // one line per variant timed: what was fitted, on what, how well
  SpgemmSelection all;              // on every case; fitted: the fit on every case
  SpgemmSelection held_out;         // on the held-out cases; fitted: the fit without them
  std::vector<std::string> held_out_matrices;  // sorted
};

// base_cost: the "cost" section of the model the planner used (shipped or tuned before). No
// timings, a time that is not positive and finite, or a variant base_cost has no entry for is
// an InvalidInputError naming it.
SpgemmFit fit_spgemm(const std::vector<SpgemmTiming>& timings, const nlohmann::json& base_cost);

// The tuned model: `base` with the fitted "cost", the tuned id of `device_name`, version "1",
// and a description naming what was timed and how well both models selected.
nlohmann::json tuned_spgemm_model(const nlohmann::json& base, const SpgemmFit& fit, const std::vector<SpgemmTiming>& timings,
                                  const std::string& device_name);

// "7 of 9 cases (worst 1.52x)": the hits of a selection score, and its worst pick against the fastest.
std::string to_string(const PredictionScore& score);

}  // namespace sparsejit::tuner
