// Measured selections kept in the cache database, so that what one process timed serves the
// next: a selection is stored as a tuning record of kind Measured (cache/cache_store.hpp)
// keyed by the device (name, compute capability, SM count, driver, library version), the
// pattern's fingerprint, the problem key (op, value type, K, layout, options: what the
// executor keys its plans by, without the runtime) and the version of the model that priced
// the shortlist. A record of another key is never found, so a stale one (new library, model,
// driver or device) is ignored, never misapplied; `sparsejit cache prune` removes it.
//
// The records live in the process's kernel cache store: with the disk cache off it is in
// memory, so runtimes of one process still share what they measured.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/features.hpp"

namespace sparsejit::ops {

// The key a measured selection of `features`' pattern and `problem_key` is stored under on
// `device`, with the version of the model op's planner uses there now (planner_model_version).
cache::MeasuredKey measured_key(Op op, const plan::DeviceTarget& device, const Features& features,
                                const std::string& problem_key);

// The times stored under `key` (infinity for a setting that did not run), or nullopt.
std::optional<std::vector<plan::TimedChoice>> recorded_times(const cache::MeasuredKey& key);

// Stores a measured selection under `key`: `measured` is the decision take_fastest made (the
// choice, its features and bucket), `timed` every setting timed with what it was priced at.
// A read-only cache skips the write quietly.
void store_selection(const cache::MeasuredKey& key, const Decision& measured, const std::vector<plan::RecordedTiming>& timed);

}  // namespace sparsejit::ops
