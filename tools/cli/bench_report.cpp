// The closing report of `sparsejit bench`: one table line per (matrix, K) record and, per K,
// the geometric-mean and worst speedup over the vendor and how far auto is from the oracle.
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

void print_table(std::ostream& out, const std::vector<ordered_json>& records) {
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %10s %5s %9s %-16s %9s %7s %9s %6s\n", "matrix", "nnz", "K", "auto ms",
                "variant", "vendor ms", "speedup", "oracle ms", "a/orc");
  out << line;
  for (const ordered_json& r : records) {
    const bool check_failed = r["check"].is_object() && !r["check"]["ok"].get<bool>();
    std::snprintf(line, sizeof line, "%-28s %10lld %5d %9s %-16s %9s %7s %9s %6s%s\n",
                  fit(r["matrix"].get<std::string>(), kNameWidth).c_str(), r["nnz"].get<long long>(), r["k"].get<int>(),
                  cell(nested_number(r, "auto", "ms"), "%.4f").c_str(),
                  fit(r["auto"]["variant"].get<std::string>(), kVariantWidth).c_str(),
                  cell(nested_number(r, "vendor", "best"), "%.4f").c_str(), cell(number(r, "speedup"), "%.2fx").c_str(),
                  cell(nested_number(r, "oracle", "ms"), "%.4f").c_str(), cell(number(r, "auto_over_oracle"), "%.2f").c_str(),
                  check_failed ? "  CHECK FAILED" : "");
    out << line;
  }
}

struct Named {
  double value;
  std::string matrix;
};

double median(std::vector<Named> values) {
  std::sort(values.begin(), values.end(), [](const Named& x, const Named& y) { return x.value < y.value; });
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
  const auto by_value = [](const Named& x, const Named& y) { return x.value < y.value; };
  for (const auto& [k, lists] : by_k) {
    const auto& [speedups, gaps] = lists;
    out << "K=" << k << ": ";
    if (speedups.empty()) {
      out << "no speedup measured";
    } else {
      double log_sum = 0;
      for (const Named& s : speedups) log_sum += std::log(s.value);
      const Named& slowest = *std::min_element(speedups.begin(), speedups.end(), by_value);
      out << speedups.size() << (speedups.size() == 1 ? " matrix" : " matrices") << ", speedup over the vendor geomean " << cell(std::exp(log_sum / double(speedups.size())), "%.2fx")
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

}  // namespace

void print_report(std::ostream& out, const std::vector<ordered_json>& records) {
  if (records.empty()) {
    out << "no (matrix, K) was measured\n";
    return;
  }
  print_table(out, records);
  print_summary(out, records);
}

}  // namespace sparsejit::cli::bench
