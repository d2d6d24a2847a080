#include "tuner/spamm_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "tuner/cost_fit.hpp"

namespace sparsejit::tuner {

namespace {

constexpr const char* kOp = "tune spamm";

std::string case_name(const SpammCaseTimes& c) { return std::string(to_string(c.precision)) + " N=" + std::to_string(c.n); }

std::map<std::string, std::vector<CostRow>> rows_by_variant(const std::vector<SpammCaseTimes>& cases, const nlohmann::json& base_cost) {
  std::map<std::string, std::vector<CostRow>> rows;
  const auto add = [&](const std::string& variant, const CostRow& row, const std::string& what) {
    check_timing(kOp, base_cost, variant, row.ms, what);
    rows[variant].push_back(row);
  };
  for (const SpammCaseTimes& c : cases) {
    add(c.vendor, {&c.vendor_terms, nullptr, c.vendor_ms}, case_name(c) + " " + c.vendor);
    for (const SpammShareTimes& s : c.shares)
      for (const SpammTileTime& t : s.tiles)
        add(t.variant, {&t.terms, &s.front, t.ms}, case_name(c) + " " + t.variant + " share " + format_number("%.3g%%", 100 * s.share));
  }
  return rows;
}

// Per share timed, the fastest tile call's ms: measured, or as `cost` predicts it.
std::vector<std::pair<double, double>> tile_curve(const SpammCaseTimes& c, const nlohmann::json* cost) {
  std::vector<std::pair<double, double>> curve;
  for (const SpammShareTimes& s : c.shares) {
    double best = std::numeric_limits<double>::infinity();
    for (const SpammTileTime& t : s.tiles) best = std::min(best, cost ? predicted(*cost, t.variant, CostRow{&t.terms, &s.front, t.ms}) : t.ms);
    if (!s.tiles.empty()) curve.emplace_back(s.share, best);
  }
  return curve;
}

std::vector<std::string> fastest_variants(const SpammCaseTimes& c) {
  std::set<std::string> names;
  for (const SpammShareTimes& s : c.shares) {
    const auto best = std::min_element(s.tiles.begin(), s.tiles.end(), [](const SpammTileTime& a, const SpammTileTime& b) { return a.ms < b.ms; });
    if (best != s.tiles.end()) names.insert(best->variant);
  }
  return {names.begin(), names.end()};
}

SpammCrossover crossover_of(const SpammCaseTimes& c, const nlohmann::json& cost) {
  SpammCrossover x;
  x.precision = c.precision;
  x.n = c.n;
  const std::string what = case_name(c);
  const auto measured = tile_curve(c, nullptr);
  if (measured.empty()) throw InvalidInputError("tune spamm: " + what + " has no tile call timed");
  x.measured = crossover_share(measured, c.vendor_ms);
  const CostRow vendor{&c.vendor_terms, nullptr, c.vendor_ms};
  x.modelled = crossover_share(tile_curve(c, &cost), predicted(cost, c.vendor, vendor));
  x.fastest = fastest_variants(c);
  return x;
}

}  // namespace

CrossoverShare crossover_share(const std::vector<std::pair<double, double>>& times, double level) {
  if (times.empty()) throw InvalidInputError("crossover_share: no share timed");
  if (times.front().second > level) return {CrossoverShare::Where::Below, times.front().first};
  if (times.front().second == level) return {CrossoverShare::Where::Between, times.front().first};
  for (std::size_t i = 1; i < times.size(); ++i) {
    const auto [s0, t0] = times[i - 1];
    const auto [s1, t1] = times[i];
    if (t1 >= level) return {CrossoverShare::Where::Between, s0 + (level - t0) * (s1 - s0) / (t1 - t0)};  // t0 < level <= t1
  }
  return {CrossoverShare::Where::Above, times.back().first};
}

std::string to_string(const CrossoverShare& s) {
  switch (s.where) {
    case CrossoverShare::Where::Between: return format_number("%.1f%%", 100 * s.share);
    case CrossoverShare::Where::Below: return "<" + format_number("%.3g%%", 100 * s.share);
    case CrossoverShare::Where::Above: return ">" + format_number("%.3g%%", 100 * s.share);
  }
  return "?";
}

SpammFit fit_spamm(const std::vector<SpammCaseTimes>& cases, const nlohmann::json& base_cost) {
  SpammFit fit;
  fit.cost = base_cost;
  for (const auto& [variant, rows] : rows_by_variant(cases, base_cost)) fit.notes.push_back(fit_variant(fit.cost, variant, rows, fit.fitted));
  for (const SpammCaseTimes& c : cases) fit.crossovers.push_back(crossover_of(c, fit.cost));
  return fit;
}

nlohmann::json tuned_spamm_model(const nlohmann::json& base, const SpammFit& fit, const std::vector<SpammCaseTimes>& cases,
                                 const std::string& device_name) {
  nlohmann::json model = base;
  model["id"] = plan::tuned_model_id(Op::SpAMM, device_name);
  model["version"] = "1";
  model["cost"] = fit.cost;
  const std::string fitted = comma_list(fit.fitted);
  std::string crossovers;
  for (const SpammCrossover& x : fit.crossovers)
    crossovers += (crossovers.empty() ? "" : ", ") + std::string(to_string(x.precision)) + " N=" + std::to_string(x.n) + " " + to_string(x.measured);
  model["description"] = "Tuned on " + device_name + " by `sparsejit tune --op spamm` from " + std::to_string(cases.size()) +
                         " precision and size cases (algebraic decay, tile calls at a given tau against the vendor's GEMM of the class): " +
                         "refitted from " + base.value("id", std::string("?")) + ": " + (fitted.empty() ? std::string("nothing") : fitted) +
                         "; the rest as there. Measured crossovers (tile call = GEMM): " + crossovers + ".";
  return model;
}

}  // namespace sparsejit::tuner
