#include "tuner/spamm_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "tuner/least_squares.hpp"

namespace sparsejit::tuner {

namespace {

// Not fitted: a launch is a few µs whatever the share, as constant as the c_tiles intercept at
// one size, so the timings cannot tell the two apart.
constexpr const char* kLaunch = "launch";

std::string number(const char* format, double x) {
  char text[32];
  std::snprintf(text, sizeof text, format, x);
  return text;
}

std::string case_name(const SpammCaseTimes& c) { return std::string(to_string(c.precision)) + " N=" + std::to_string(c.n); }

// Σ coefficient · amount over the terms (a term without a coefficient costs nothing, as in the
// planner's formulas).
double priced(const nlohmann::json& coefficients, const nlohmann::json& terms) {
  double total = 0;
  for (const auto& [name, amount] : terms.items())
    if (coefficients.contains(name)) total += coefficients[name].get<double>() * amount.get<double>();
  return total;
}

// One timed call of a variant: its terms, the front it paid (empty for the vendor's GEMM) and its time.
struct Row {
  const nlohmann::json* terms;
  const nlohmann::json* front;
  double ms;
};

const nlohmann::json kNoFront = nlohmann::json::object();

// The call's predicted ms under `cost`.
double predicted(const nlohmann::json& cost, const std::string& variant, const Row& row) {
  return priced(cost.at(variant), *row.front) + priced(cost.at(variant), *row.terms);
}

void check_time(double ms, const std::string& what) {
  if (!(ms > 0 && std::isfinite(ms))) throw InvalidInputError("tune spamm: " + what + " took " + number("%g", ms) + " ms (a time must be positive)");
}

std::map<std::string, std::vector<Row>> rows_by_variant(const std::vector<SpammCaseTimes>& cases, const nlohmann::json& base_cost) {
  std::map<std::string, std::vector<Row>> rows;
  const auto add = [&](const std::string& variant, const Row& row, const std::string& what) {
    if (!base_cost.contains(variant)) throw InvalidInputError("tune spamm: the model has no cost entry for variant '" + variant + "'");
    check_time(row.ms, what);
    rows[variant].push_back(row);
  };
  for (const SpammCaseTimes& c : cases) {
    add(c.vendor, {&c.vendor_terms, &kNoFront, c.vendor_ms}, case_name(c) + " " + c.vendor);
    for (const SpammShareTimes& s : c.shares)
      for (const SpammTileTime& t : s.tiles) add(t.variant, {&t.terms, &s.front, t.ms}, case_name(c) + " " + t.variant + " share " + number("%.3g%%", 100 * s.share));
  }
  return rows;
}

// The terms of `variant` to fit: those with a coefficient that some row exercises, other than
// the launch and the front's.
std::vector<std::string> terms_to_fit(const nlohmann::json& coefficients, const std::vector<Row>& rows) {
  std::vector<std::string> names;
  for (const auto& [name, _] : coefficients.items()) {
    if (name == kLaunch) continue;
    const bool front = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.front->contains(name); });
    const bool used = std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.terms->value(name, 0.0) != 0; });
    if (used && !front) names.push_back(name);
  }
  return names;
}

// Median and worst |predicted / measured - 1| of the rows under `cost`.
std::pair<double, double> relative_errors(const nlohmann::json& cost, const std::string& variant, const std::vector<Row>& rows) {
  std::vector<double> errors;
  for (const Row& r : rows) errors.push_back(std::abs(predicted(cost, variant, r) / r.ms - 1));
  std::sort(errors.begin(), errors.end());
  return {errors[errors.size() / 2], errors.back()};
}

// Fits `variant`'s coefficients in `cost` (see the header); returns the note.
std::string fit_variant(nlohmann::json& cost, const std::string& variant, const std::vector<Row>& rows, std::vector<std::string>& fitted) {
  const std::vector<std::string> names = terms_to_fit(cost[variant], rows);
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  const std::string on = std::to_string(rows.size()) + " timings";
  if (names.empty() || rows.size() < names.size())
    return variant + ": kept (" + on + " for " + std::to_string(names.size()) + " terms to fit" + (list.empty() ? "" : ": " + list) + ")";
  const nlohmann::json before = cost;
  // Row i divided by its time: minimizing Σ (a_i·c / t_i - (1 - fixed_i / t_i))² is the
  // relative-error fit of what is left once the launch and the front are taken off.
  std::vector<std::vector<double>> a;
  std::vector<double> y;
  for (const Row& r : rows) {
    const double fixed = priced(cost[variant], *r.front) + cost[variant].value(kLaunch, 0.0) * r.terms->value(kLaunch, 0.0);
    std::vector<double> row;
    for (const std::string& name : names) row.push_back(r.terms->value(name, 0.0) / r.ms);
    a.push_back(std::move(row));
    y.push_back(1 - fixed / r.ms);
  }
  const std::vector<double> c = nonnegative_least_squares(a, y);
  std::string zero;  // a coefficient the fit held at 0: the timings leave nothing for that term to cost
  for (std::size_t j = 0; j < names.size(); ++j) {
    cost[variant][names[j]] = c[j];
    fitted.push_back(variant + " " + names[j]);
    if (c[j] == 0) zero += (zero.empty() ? "" : ", ") + names[j];
  }
  const auto [median_before, worst_before] = relative_errors(before, variant, rows);
  const auto [median_after, worst_after] = relative_errors(cost, variant, rows);
  return variant + ": fitted " + list + " on " + on + ": |predicted/measured - 1| median " + number("%.3g", median_before) + " -> " +
         number("%.3g", median_after) + ", worst " + number("%.3g", worst_before) + " -> " + number("%.3g", worst_after) +
         (zero.empty() ? "" : "; zero: " + zero);
}

// Per share timed, the fastest tile call's ms: measured, or as `cost` predicts it.
std::vector<std::pair<double, double>> tile_curve(const SpammCaseTimes& c, const nlohmann::json* cost) {
  std::vector<std::pair<double, double>> curve;
  for (const SpammShareTimes& s : c.shares) {
    double best = std::numeric_limits<double>::infinity();
    for (const SpammTileTime& t : s.tiles) best = std::min(best, cost ? predicted(*cost, t.variant, {&t.terms, &s.front, t.ms}) : t.ms);
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
  const Row vendor{&c.vendor_terms, &kNoFront, c.vendor_ms};
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
    case CrossoverShare::Where::Between: return number("%.1f%%", 100 * s.share);
    case CrossoverShare::Where::Below: return "<" + number("%.3g%%", 100 * s.share);
    case CrossoverShare::Where::Above: return ">" + number("%.3g%%", 100 * s.share);
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
  std::string fitted, crossovers;
  for (const std::string& f : fit.fitted) fitted += (fitted.empty() ? "" : ", ") + f;
  for (const SpammCrossover& x : fit.crossovers)
    crossovers += (crossovers.empty() ? "" : ", ") + std::string(to_string(x.precision)) + " N=" + std::to_string(x.n) + " " + to_string(x.measured);
  model["description"] = "Tuned on " + device_name + " by `sparsejit tune --op spamm` from " + std::to_string(cases.size()) +
                         " precision and size cases (algebraic decay, tile calls at a given tau against the vendor's GEMM of the class): " +
                         "refitted from " + base.value("id", std::string("?")) + ": " + (fitted.empty() ? std::string("nothing") : fitted) +
                         "; the rest as there. Measured crossovers (tile call = GEMM): " + crossovers + ".";
  return model;
}

}  // namespace sparsejit::tuner
