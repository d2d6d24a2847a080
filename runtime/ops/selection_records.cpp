#include "ops/selection_records.hpp"

#include "jit/compiler.hpp"
#include "ops/plan_sources.hpp"

namespace sparsejit::ops {

namespace {

cache::CacheStore& record_store() { return jit::default_compiler().cache().store(); }

double time_of(const std::vector<plan::RecordedTiming>& timed, const Decision& d) {
  for (const plan::RecordedTiming& t : timed)
    if (t.variant == d.variant && t.params == d.params) return t.ms;
  return 0;
}

}  // namespace

cache::MeasuredKey measured_key(Op op, const plan::DeviceTarget& device, const Features& features,
                                const std::string& problem_key) {
  return {device_key(device), fingerprint_hex(features.fingerprint), problem_key, planner_model_version(op, device)};
}

std::optional<std::vector<plan::TimedChoice>> recorded_times(const cache::MeasuredKey& key) {
  const std::optional<cache::TuningRecord> record = record_store().find_measured_record(key);
  if (!record) return std::nullopt;
  std::vector<plan::TimedChoice> times;
  for (const plan::RecordedTiming& t : plan::recorded_timings(*record)) times.push_back({t.variant, t.params, t.ms});
  return times;
}

void store_selection(const cache::MeasuredKey& key, const Decision& measured, const std::vector<plan::RecordedTiming>& timed) {
  cache::TuningRecord r;
  r.kind = cache::RecordKind::Measured;
  r.device = key.device;
  r.op = to_string(measured.op);
  r.feature_bucket = measured.features.value("feature_bucket", std::string());
  r.variant = measured.variant;
  r.params = measured.params;
  r.time_ms = time_of(timed, measured);
  r.fingerprint = key.fingerprint;
  r.plan_key = key.plan_key;
  r.model_version = key.model_version;
  r.features = measured.features;
  for (const plan::RecordedTiming& t : timed) r.timings.push_back(plan::to_json(t));
  record_store().insert_tuning_record(r);
}

}  // namespace sparsejit::ops
