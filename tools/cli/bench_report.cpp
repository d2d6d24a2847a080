// The closing report of `sparsejit bench`: one table line per (matrix, K) record and, per K,
// the geometric-mean and worst speedup over the vendor and how far auto is from the oracle,
// then, for SDDMM records with "reuse", what declaring the pattern reused gains.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "cli/bench.hpp"

namespace sparsejit::cli::bench {

using nlohmann::ordered_json;

namespace {

constexpr std::size_t kNameWidth = 28;
constexpr std::size_t kVariantWidth = 16;

// Keeps the end of a long name (where matrix files differ) behind "..".
std::string fit(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  return ".." + text.substr(text.size() - (width - 2));
}

std::optional<double> number(const ordered_json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<double> nested_number(const ordered_json& j, const char* outer, const char* inner) {
  const auto it = j.find(outer);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  return number(*it, inner);
}

std::string cell(std::optional<double> value, const char* format) {
  if (!value) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, *value);
  return buffer;
}

// Whether a record's --check ran and failed (records of runs without --check have no "check").
bool check_failed(const ordered_json& r) {
  const auto check = r.find("check");
  return check != r.end() && check->is_object() && !check->at("ok").get<bool>();
}

void print_table(std::ostream& out, const std::vector<ordered_json>& records) {
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %10s %5s %9s %-16s %9s %7s %9s %6s\n", "matrix", "nnz", "K", "auto ms",
                "variant", "vendor ms", "speedup", "oracle ms", "a/orc");
  out << line;
  for (const ordered_json& r : records) {
    const bool failed_check = check_failed(r);
    std::snprintf(line, sizeof line, "%-28s %10lld %5d %9s %-16s %9s %7s %9s %6s%s\n",
                  fit(r["matrix"].get<std::string>(), kNameWidth).c_str(), r["nnz"].get<long long>(), r["k"].get<int>(),
                  cell(nested_number(r, "auto", "ms"), "%.4f").c_str(),
                  fit(r["auto"]["variant"].get<std::string>(), kVariantWidth).c_str(),
                  cell(nested_number(r, "vendor", "best"), "%.4f").c_str(), cell(number(r, "speedup"), "%.2fx").c_str(),
                  cell(nested_number(r, "oracle", "ms"), "%.4f").c_str(), cell(number(r, "auto_over_oracle"), "%.2f").c_str(),
                  failed_check ? "  CHECK FAILED" : "");
    out << line;
  }
}

struct Named {
  double value;
  std::string matrix;
};

bool by_value(const Named& x, const Named& y) { return x.value < y.value; }

double geomean(const std::vector<Named>& values) {
  double log_sum = 0;
  for (const Named& x : values) log_sum += std::log(x.value);
  return std::exp(log_sum / double(values.size()));
}

// How many speedups are under 0.95x (slower than the vendor beyond noise).
std::ptrdiff_t under_0_95(const std::vector<Named>& speedups) {
  return std::count_if(speedups.begin(), speedups.end(), [](const Named& x) { return x.value < 0.95; });
}

double median(std::vector<Named> values) {
  std::sort(values.begin(), values.end(), by_value);
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2].value : 0.5 * (values[n / 2 - 1].value + values[n / 2].value);
}

void print_summary(std::ostream& out, const std::vector<ordered_json>& records) {
  std::map<int, std::pair<std::vector<Named>, std::vector<Named>>> by_k;  // K -> speedups, auto/oracle
  for (const ordered_json& r : records) {
    auto& [speedups, gaps] = by_k[r["k"].get<int>()];
    const std::string name = r["matrix"].get<std::string>();
    if (const auto s = number(r, "speedup")) speedups.push_back({*s, name});
    if (const auto g = number(r, "auto_over_oracle")) gaps.push_back({*g, name});
  }
  for (const auto& [k, lists] : by_k) {
    const auto& [speedups, gaps] = lists;
    out << "K=" << k << ": ";
    if (speedups.empty()) {
      out << "no speedup measured";
    } else {
      const Named& slowest = *std::min_element(speedups.begin(), speedups.end(), by_value);
      out << speedups.size() << (speedups.size() == 1 ? " matrix" : " matrices") << ", speedup over the vendor geomean " << cell(geomean(speedups), "%.2fx")
          << ", min " << cell(slowest.value, "%.2fx") << " (" << slowest.matrix << ")";
    }
    if (!gaps.empty()) {
      const Named& worst = *std::max_element(gaps.begin(), gaps.end(), by_value);
      out << "; auto/oracle median " << cell(median(gaps), "%.2f") << ", worst " << cell(worst.value, "%.2f") << " ("
          << worst.matrix << ")";
    }
    out << "\n";
  }
}

// Per K, where auto measured its shortlist (SpMM): the model's own choice against the vendor
// (geomean, and how many under 0.95x) next to auto's on the same matrices, and what the
// measuring cost in calls of auto (median, most with its matrix).
void print_measured_summary(std::ostream& out, const std::vector<ordered_json>& records) {
  struct Stats {
    std::vector<Named> model, measured, calls;
  };
  std::map<int, Stats> by_k;
  for (const ordered_json& r : records) {
    const auto model = r.find("model");
    if (model == r.end() || !model->is_object()) continue;
    const auto model_speedup = number(*model, "speedup");
    const auto speedup = number(r, "speedup");
    if (!model_speedup || !speedup) continue;
    Stats& stats = by_k[r["k"].get<int>()];
    const std::string name = r["matrix"].get<std::string>();
    stats.model.push_back({*model_speedup, name});
    stats.measured.push_back({*speedup, name});
    if (const auto calls = nested_number(r, "auto", "measure_calls")) stats.calls.push_back({*calls, name});
  }
  for (const auto& [k, stats] : by_k) {
    out << "K=" << k << " measured selection on " << stats.model.size() << " matrices: speedup geomean "
        << cell(geomean(stats.measured), "%.2fx") << " (" << under_0_95(stats.measured)
        << " under 0.95x), the model's own choice " << cell(geomean(stats.model), "%.2fx") << " ("
        << under_0_95(stats.model) << " under 0.95x)";
    if (!stats.calls.empty()) {
      const Named& most = *std::max_element(stats.calls.begin(), stats.calls.end(),
                                            [](const Named& x, const Named& y) { return x.value < y.value; });
      out << "; measuring took median " << cell(median(stats.calls), "%.0f") << " calls of auto, most "
          << cell(most.value, "%.0f") << " (" << most.matrix << ")";
    }
    out << "\n";
  }
}

// Per K: auto's plans launched in plain stream order (early launch off) against the vendor,
// and what early launch saved per call (median, microseconds).
void print_plain_launch_summary(std::ostream& out, const std::vector<ordered_json>& records) {
  std::map<int, std::pair<std::vector<Named>, std::vector<Named>>> by_k;  // K -> speedups, saved µs
  for (const ordered_json& r : records) {
    const auto speedup = nested_number(r, "plain_launch", "speedup");
    const auto plain_ms = nested_number(r, "plain_launch", "ms");
    const auto auto_ms = nested_number(r, "auto", "ms");
    if (!speedup || !plain_ms || !auto_ms) continue;
    auto& [speedups, saved] = by_k[r["k"].get<int>()];
    const std::string name = r["matrix"].get<std::string>();
    speedups.push_back({*speedup, name});
    saved.push_back({1e3 * (*plain_ms - *auto_ms), name});
  }
  for (const auto& [k, lists] : by_k) {
    const auto& [speedups, saved] = lists;
    out << "K=" << k << " plain launches (early launch off): speedup geomean " << cell(geomean(speedups), "%.2fx")
        << " (" << under_0_95(speedups)
        << " under 0.95x); early launch saved median " << cell(median(saved), "%.2f") << " us per call\n";
  }
}

// One K's "reuse" objects, summarized.
struct ReuseStats {
  std::size_t measured = 0;          // with both reindexed_ms and without_reuse_ms
  std::vector<Named> prepare_calls;  // prepare_ms / reindexed_ms: the preprocessing in calls of the variant
  std::vector<Named> payoffs;        // pays_off_after_calls, where the variant wins
};

std::map<int, ReuseStats> reuse_stats_by_k(const std::vector<ordered_json>& records) {
  std::map<int, ReuseStats> by_k;
  for (const ordered_json& r : records) {
    const auto reuse = r.find("reuse");
    if (reuse == r.end() || !reuse->is_object()) continue;
    ReuseStats& stats = by_k[r["k"].get<int>()];
    const std::string name = r["matrix"].get<std::string>();
    const auto reindexed = number(*reuse, "reindexed_ms");
    if (reindexed && number(*reuse, "without_reuse_ms")) ++stats.measured;
    const auto prepare = number(*reuse, "prepare_ms");
    if (prepare && reindexed && *reindexed > 0) stats.prepare_calls.push_back({*prepare / *reindexed, name});
    if (const auto calls = number(*reuse, "pays_off_after_calls")) stats.payoffs.push_back({*calls, name});
  }
  return by_k;
}

// Per K: on how many matrices the reindexed variant beats every choice without reuse, its
// preprocessing as a multiple of one of its calls (median), and where it wins, after how
// many calls it pays off (median, and the most with its matrix).
void print_reuse_summary(std::ostream& out, const std::vector<ordered_json>& records) {
  for (const auto& [k, stats] : reuse_stats_by_k(records)) {
    out << "K=" << k << " reuse: " << reuse_variant();
    if (stats.measured == 0) {
      out << " not measured\n";
      continue;
    }
    out << " beats every choice without reuse on " << stats.payoffs.size() << " of " << stats.measured
        << (stats.measured == 1 ? " matrix" : " matrices");
    if (!stats.prepare_calls.empty())
      out << "; preprocessing median " << cell(median(stats.prepare_calls), "%.1f") << " of its calls";
    if (!stats.payoffs.empty()) {
          const Named& most = *std::max_element(stats.payoffs.begin(), stats.payoffs.end(), by_value);
      out << "; pays off after median " << cell(median(stats.payoffs), "%.0f") << " calls, most "
          << cell(most.value, "%.0f") << " (" << most.matrix << ")";
    }
    out << "\n";
  }
}

// Per K: the first call on a new matrix handle (features, plan, format build and the call) in
// calls of auto's steady state: median, and the most with its matrix.
void print_first_call_summary(std::ostream& out, const std::vector<ordered_json>& records) {
  std::map<int, std::vector<Named>> by_k;
  for (const ordered_json& r : records) {
    const auto first = r.find("first_call");
    if (first == r.end() || !first->is_object()) continue;
    if (const auto calls = number(*first, "calls")) by_k[r["k"].get<int>()].push_back({*calls, r["matrix"].get<std::string>()});
  }
  for (const auto& [k, calls] : by_k) {
    const Named& most = *std::max_element(calls.begin(), calls.end(), [](const Named& x, const Named& y) { return x.value < y.value; });
    out << "K=" << k << " first call on a new handle: median " << cell(median(calls), "%.1f") << " calls of auto, most "
        << cell(most.value, "%.1f") << " (" << most.matrix << ")\n";
  }
}

// SpGEMM records (one per matrix, no K): the table, then the geometric-mean and worst speedup
// over cuSPARSE's whole call, where it failed, and auto against the oracle.
// Peak device memory of auto's whole call over cuSPARSE's, on the (up to) ten records with the
// most products that have both peaks.
void print_spgemm_memory(std::ostream& out, const std::vector<ordered_json>& records) {
  std::vector<std::pair<double, Named>> by_products;
  for (const ordered_json& r : records) {
    const auto ours = nested_number(r, "auto", "peak_bytes"), vendor = nested_number(r, "vendor", "peak_bytes");
    if (ours && vendor && *vendor > 0)
      by_products.push_back({r["products"].get<double>(), {*ours / *vendor, r["matrix"].get<std::string>()}});
  }
  if (by_products.empty()) return;
  std::sort(by_products.begin(), by_products.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  if (by_products.size() > 10) by_products.resize(10);
  std::vector<Named> ratios;
  for (const auto& entry : by_products) ratios.push_back(entry.second);
  const Named& most = *std::max_element(ratios.begin(), ratios.end(), by_value);
  out << "spgemm peak device memory, auto over cuSPARSE's, on the " << ratios.size() << " with the most products: median "
      << cell(median(ratios), "%.2fx") << ", most " << cell(most.value, "%.2fx") << " (" << most.matrix << ")\n";
}

// One line of the numeric phase's ratios named `field` ("numeric"."replay_speedup", ...): their
// geomean and the lowest; nothing where no record has the field (older records).
void print_numeric_ratio(std::ostream& out, const std::vector<ordered_json>& records, const char* field, const char* label) {
  std::vector<Named> ratios;
  for (const ordered_json& r : records)
    if (const auto s = nested_number(r, "numeric", field)) ratios.push_back({*s, r["matrix"].get<std::string>()});
  if (ratios.empty()) return;
  const Named& slowest = *std::min_element(ratios.begin(), ratios.end(), by_value);
  out << label << ": geomean " << cell(geomean(ratios), "%.2fx") << ", min " << cell(slowest.value, "%.2fx") << " ("
      << slowest.matrix << ")\n";
}

void print_spgemm_report(std::ostream& out, const std::vector<ordered_json>& records) {
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %10s %12s %12s %9s %-10s %8s %9s %7s %6s\n", "matrix", "nnz", "products", "nnz(C)",
                "auto ms", "variant", "GFLOP/s", "vendor ms", "speedup", "a/orc");
  out << line;
  std::vector<Named> speedups, gaps;
  std::vector<std::string> vendor_failed;
  for (const ordered_json& r : records) {
    const bool failed_check = check_failed(r);
    const std::string name = r["matrix"].get<std::string>();
    const bool vendor_failure = r["vendor"].contains("failed");
    std::snprintf(line, sizeof line, "%-28s %10lld %12lld %12lld %9s %-10s %8s %9s %7s %6s%s\n", fit(name, kNameWidth).c_str(),
                  r["nnz"].get<long long>(), r["products"].get<long long>(), r["nnz_c"].get<long long>(),
                  cell(nested_number(r, "auto", "ms"), "%.4f").c_str(), fit(r["auto"]["variant"].get<std::string>(), 10).c_str(),
                  cell(nested_number(r, "auto", "gflops"), "%.1f").c_str(),
                  vendor_failure ? "failed" : cell(nested_number(r, "vendor", "best"), "%.4f").c_str(),
                  cell(number(r, "speedup"), "%.2fx").c_str(), cell(number(r, "auto_over_oracle"), "%.2f").c_str(),
                  failed_check ? "  CHECK FAILED" : "");
    out << line;
    if (const auto s = number(r, "speedup")) speedups.push_back({*s, name});
    if (const auto g = number(r, "auto_over_oracle")) gaps.push_back({*g, name});
    if (vendor_failure) vendor_failed.push_back(name);
  }
  if (speedups.empty()) {
    out << "spgemm: no speedup measured";
  } else {
    const Named& slowest = *std::min_element(speedups.begin(), speedups.end(), by_value);
    out << "spgemm: " << speedups.size() << (speedups.size() == 1 ? " matrix" : " matrices")
        << ", speedup over cuSPARSE's whole call geomean " << cell(geomean(speedups), "%.2fx") << ", min "
        << cell(slowest.value, "%.2fx") << " (" << slowest.matrix << "), " << under_0_95(speedups) << " under 0.95x";
  }
  if (!gaps.empty()) {
    const Named& worst = *std::max_element(gaps.begin(), gaps.end(), by_value);
    out << "; auto/oracle median " << cell(median(gaps), "%.2f") << ", worst " << cell(worst.value, "%.2f") << " (" << worst.matrix << ")";
  }
  out << "\n";
  if (!vendor_failed.empty()) {
    out << "spgemm: cuSPARSE failed on " << vendor_failed.size() << ":";
    for (const std::string& name : vendor_failed) out << " " << name;
    out << "\n";
  }
  std::vector<Named> numeric;
  for (const ordered_json& r : records)
    if (const auto s = nested_number(r, "numeric", "speedup")) numeric.push_back({*s, r["matrix"].get<std::string>()});
  if (!numeric.empty()) {
    const Named& slowest = *std::min_element(numeric.begin(), numeric.end(), by_value);
    out << "spgemm numeric phase (pattern reused): " << numeric.size() << (numeric.size() == 1 ? " matrix" : " matrices")
        << ", speedup over cusparseSpGEMMreuse_compute geomean " << cell(geomean(numeric), "%.2fx") << ", min "
        << cell(slowest.value, "%.2fx") << " (" << slowest.matrix << ")\n";
  }
  print_numeric_ratio(out, records, "replay_speedup", "spgemm numeric phase replayed as a graph (Options::replay_launches)");
  print_numeric_ratio(out, records, "graph_speedup", "spgemm numeric phase, device time (both sides' calls replayed from a captured graph)");
  print_spgemm_memory(out, records);
}

}  // namespace

void print_report(std::ostream& out, const std::vector<ordered_json>& records) {
  if (records.empty()) {
    out << "no (matrix, K) was measured\n";
    return;
  }
  if (records.front().value("op", "") == to_string(Op::SpGEMM)) {
    print_spgemm_report(out, records);
    return;
  }
  print_table(out, records);
  print_summary(out, records);
  print_measured_summary(out, records);
  print_plain_launch_summary(out, records);
  print_reuse_summary(out, records);
  print_first_call_summary(out, records);
}

}  // namespace sparsejit::cli::bench
