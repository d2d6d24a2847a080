// The SDDMM "reuse" record of `sparsejit bench`: what declaring a pattern reused
// (Options::reuse = Reuse::Many) costs once and saves per call, and after how many calls the
// saving has paid for the preprocessing. Only arithmetic on times measured elsewhere
// (bench_measure.cpp), so it is tested without a GPU.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cli/bench.hpp"
#include "variants/catalog.hpp"

namespace sparsejit::cli::bench {

using nlohmann::ordered_json;

namespace {

// A forced candidate's label is its variant name, followed by its parameters when forced.
bool is_reuse_label(const std::string& label) { return label.rfind(reuse_variant(), 0) == 0; }

ordered_json or_null(const std::optional<double>& value) { return value ? ordered_json(*value) : ordered_json(nullptr); }

}  // namespace

const std::string& reuse_variant() {
  static const std::string name = [] {
    for (const variants::VariantInfo& v : variants::catalog(Op::SDDMM))
      if (v.traits.needs_reuse) return v.name;
    throw std::logic_error("bench: no registered sddmm variant needs pattern reuse");
  }();
  return name;
}

std::optional<int64_t> pays_off_after_calls(double prepare_ms, double without_reuse_ms, double reindexed_ms) {
  const double saved_per_call = without_reuse_ms - reindexed_ms;
  if (!std::isfinite(prepare_ms) || !std::isfinite(saved_per_call) || !(saved_per_call > 0)) return std::nullopt;
  const double calls = std::ceil(std::max(0.0, prepare_ms) / saved_per_call);
  // Beyond 1e18 calls (a saving at the timer's noise level) it never pays off in practice,
  // and the count would not fit an int64.
  if (!(calls < 1e18)) return std::nullopt;
  return std::max<int64_t>(1, int64_t(calls));
}

Fastest best_without_reuse(const ordered_json& record) {
  Fastest best;
  const ordered_json& chosen = record.at("auto");
  const std::string auto_variant = chosen.at("variant").get<std::string>();
  if (!is_reuse_label(auto_variant) && chosen.at("ms").is_number()) best.offer(auto_variant, chosen["ms"].get<double>());
  for (const auto& [label, ms] : record.at("variants").items())
    if (!is_reuse_label(label) && ms.is_number()) best.offer(label, ms.get<double>());
  const ordered_json& vendor = record.at("vendor");
  if (vendor.at("best").is_number())
    best.offer("cusparse:" + vendor.at("best_alg").get<std::string>(), vendor["best"].get<double>());
  return best;
}

ordered_json reuse_record(const ReuseTimes& times, const Fastest& without_reuse) {
  std::optional<double> prepare_ms;
  if (times.first_call_ms && times.reindexed_ms) prepare_ms = std::max(0.0, *times.first_call_ms - *times.reindexed_ms);
  std::optional<int64_t> calls;
  if (prepare_ms && without_reuse.found()) calls = pays_off_after_calls(*prepare_ms, without_reuse.ms, *times.reindexed_ms);
  ordered_json record;
  record["first_call_ms"] = or_null(times.first_call_ms);
  record["prepare_ms"] = or_null(prepare_ms);
  record["reindexed_ms"] = or_null(times.reindexed_ms);
  record["without_reuse_ms"] = without_reuse.found() ? ordered_json(without_reuse.ms) : ordered_json(nullptr);
  record["without_reuse_variant"] = without_reuse.found() ? ordered_json(without_reuse.name) : ordered_json(nullptr);
  record["auto_reuse_ms"] = times.auto_reuse_ms;
  record["auto_reuse_variant"] = times.auto_reuse_variant;
  record["pays_off_after_calls"] = calls ? ordered_json(*calls) : ordered_json(nullptr);
  return record;
}

}  // namespace sparsejit::cli::bench
