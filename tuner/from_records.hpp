// `sparsejit tune --from-records`: retrain the op's tuned model from every tuning record of
// this device (what `sparsejit tune` measured and what measured selections timed in real use),
// with the trainer `tune` uses (train_spmm_model / train_sddmm_model), and keep the result only
// when it predicts records it was not trained on better than the model the planner uses now.
//
// Cases. A tune record is one candidate of one case ("<fingerprint> k<K> <dtype>"); a measured
// selection is a case of its own (its fingerprint and problem key) with every setting it timed.
// Records without features (written before records carried them) cannot train a tree and are
// skipped, and counted.
//
// Held out. Patterns, not rows: the distinct fingerprints are ordered by a hash of their text
// and every kHoldOutEvery-th is held out, with all its cases, so no held-out pattern is seen in
// training under another K or problem. At least one pattern is held out and one trained on;
// with fewer than two patterns nothing is retrained.
//
// Judging a model on a case: the setting the model would run among those the case timed
// correctly (model_pick), within 10% of the case's fastest counts as a hit. The rate of hits
// over the held-out cases with at least two correct timings is compared before and after; the
// retrained model is stored (as `tune` stores it: the cache's tuned model of this device) only
// when its rate is higher.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "sparsejit/decision.hpp"
#include "tuner/train.hpp"

namespace sparsejit::tuner {

inline constexpr std::size_t kHoldOutEvery = 5;
inline constexpr double kWithinOfBest = 1.10;

// Every timing of `records` as a Measurement (case, features, K and value type from the
// features, time, terms). Records without features add to `skipped`.
std::vector<Measurement> measurements_from_records(const std::vector<cache::TuningRecord>& records, int& skipped);

// The pattern of a measurement: the first word of its case id (the fingerprint).
std::string pattern_of(const Measurement& m);

struct PatternSplit {
  std::vector<Measurement> training;
  std::vector<Measurement> held_out;
  std::size_t training_patterns = 0;
  std::size_t held_out_patterns = 0;
  std::set<std::string> held_out_set;  // the held-out patterns
};
// The split described above; everything in training when there are fewer than two patterns.
PatternSplit split_by_pattern(const std::vector<Measurement>& measurements);

// The setting `model` would run among `group` (one case's measurements): the cheapest by the
// model's cost formulas over the stored terms, within the variant SDDMM's tree names for the
// case's features when it names one the case timed. nullptr when no correct setting can be
// priced and no tree names one.
const Measurement* model_pick(Op op, const nlohmann::json& model, const std::vector<const Measurement*>& group);

struct PredictionScore {
  int cases = 0;         // held-out cases with at least two correct timings
  int within = 0;        // of them, picked within kWithinOfBest of the fastest
  double worst = 1;      // the largest picked / fastest (infinity: a case without a pick)
  double rate() const { return cases > 0 ? double(within) / cases : 0; }
};
PredictionScore score_model(Op op, const nlohmann::json& model, const std::vector<Measurement>& cases);

struct RetrainSummary {
  int records = 0;
  int skipped = 0;  // records without features
  std::size_t training_patterns = 0, held_out_patterns = 0;
  std::vector<std::string> held_out;  // the held-out patterns' fingerprints, sorted
  PredictionScore before, after;
  bool trained = false;  // a model was trained (enough patterns, no training error)
  bool stored = false;   // it predicted the held-out cases better and is now the tuned model
  TrainedModel model;
  std::vector<std::string> notes;  // why not trained, and the trainer's notes
};

// Reads the records of `device` and `op` from `store`, retrains over the training patterns
// starting from `current` (the planner's model now), judges both on the held-out patterns and
// stores the retrained one in `store` when it is better.
RetrainSummary retrain_from_records(cache::CacheStore& store, const cache::DeviceKey& device, Op op,
                                    const nlohmann::json& current);

}  // namespace sparsejit::tuner
