// What the planners decide from besides a call's own inputs, gathered for them here: the op's
// model and the tuning records of this device (both from the cache database), and a forced
// choice from SPARSEJIT_FORCE. The planners (plan/) are pure; the executors, explain and the
// tuner call these and pass the results in.
//
// Lookup order the planners apply (DESIGN.md "The way one call flows"):
//   1. forced choice                                   source = forced
//   2. tuning records of this device for the bucket    source = tuned
//   3. the op's model: the tuned model of this device
//      from the cache database when there is one
//      (model_id "<op>-tuned-<device>"), else the
//      shipped models/<op>.json                        source = model
//   4. the op's default                                source = default
// Records and models of another device name, compute capability, driver or library version
// are ignored (not deleted). With SPARSEJIT_CACHE_DIR="" there is no database: nothing is
// tuned and the shipped models apply. Each lookup reads the database once per process and
// (device, op, bucket) or (device, op); forget_tuned_lookups() drops what was remembered.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "plan/planner.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::ops {

// The key tuning records and models of `device` are stored under: its name, compute
// capability and SM count, this process's driver version (0 without a driver) and the
// library version.
cache::DeviceKey device_key(const plan::DeviceTarget& device);

// The tuned choice for a bucket on `device` (memoized), or nullopt.
std::optional<plan::TunedChoice> tuned_choice(Op op, const plan::DeviceTarget& device, const std::string& bucket);

// The model the planner prices candidates with: the tuned model of `device` when the cache
// has one, else the shipped one (memoized).
std::shared_ptr<const nlohmann::json> planner_model(Op op, const plan::DeviceTarget& device);
// The same read from `store` now (nullptr: the shipped model), not memoized: for tools that
// look into another cache directory.
std::shared_ptr<const nlohmann::json> planner_model_in(cache::CacheStore* store, Op op, const plan::DeviceTarget& device);

// What measured-selection records are keyed by for a model: "<id> v<version> <first 12 hex
// digits of the SHA-256 of its JSON>", so that a retrained model (same id and version) differs.
std::string model_version(const nlohmann::json& model);
// model_version of planner_model(op, device) (memoized with it).
std::string planner_model_version(Op op, const plan::DeviceTarget& device);

void forget_tuned_lookups();

// The model and the tuning-record lookup of `op` on `device`.
plan::PlanSources plan_sources(Op op, const plan::DeviceTarget& device);

// `options` with SPARSEJIT_FORCE=op:variant[:k=v,...] folded into variant and params when the
// options force nothing themselves and the variable names this op (one naming another op is
// ignored); a malformed value is an InvalidInputError naming it.
Options with_environment_force(Op op, const Options& options);

}  // namespace sparsejit::ops
