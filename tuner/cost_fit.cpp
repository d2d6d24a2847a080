#include "tuner/cost_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sparsejit/error.hpp"
#include "tuner/least_squares.hpp"

namespace sparsejit::tuner {

namespace {

// Not fitted (see the header).
constexpr const char* kLaunch = "launch";

double front_priced(const nlohmann::json& coefficients, const CostRow& row) { return row.front ? priced(coefficients, *row.front) : 0; }

bool in_front(const CostRow& row, const std::string& term) { return row.front && row.front->contains(term); }

// The terms of the variant to fit: those with a coefficient that some row exercises, other
// than the launch and the front's.
std::vector<std::string> terms_to_fit(const nlohmann::json& coefficients, const std::vector<CostRow>& rows) {
  std::vector<std::string> names;
  for (const auto& [name, _] : coefficients.items()) {
    if (name == kLaunch) continue;
    const bool front = std::any_of(rows.begin(), rows.end(), [&](const CostRow& r) { return in_front(r, name); });
    const bool used = std::any_of(rows.begin(), rows.end(), [&](const CostRow& r) { return r.terms->value(name, 0.0) != 0; });
    if (used && !front) names.push_back(name);
  }
  return names;
}

}  // namespace

std::string comma_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

std::string format_number(const char* format, double x) {
  char text[48];
  std::snprintf(text, sizeof text, format, x);
  return text;
}

double priced(const nlohmann::json& coefficients, const nlohmann::json& terms) {
  double total = 0;
  for (const auto& [name, amount] : terms.items())
    if (coefficients.contains(name)) total += coefficients[name].get<double>() * amount.get<double>();
  return total;
}

double predicted(const nlohmann::json& cost, const std::string& variant, const CostRow& row) {
  return front_priced(cost.at(variant), row) + priced(cost.at(variant), *row.terms);
}

void check_timing(const std::string& op, const nlohmann::json& cost, const std::string& variant, double ms, const std::string& what) {
  if (!cost.contains(variant)) throw InvalidInputError(op + ": the model has no cost entry for variant '" + variant + "'");
  if (!(ms > 0 && std::isfinite(ms)))
    throw InvalidInputError(op + ": " + what + " took " + format_number("%g", ms) + " ms (a time must be positive)");
}

std::pair<double, double> relative_errors(const nlohmann::json& cost, const std::string& variant, const std::vector<CostRow>& rows) {
  std::vector<double> errors;
  for (const CostRow& r : rows) errors.push_back(std::abs(predicted(cost, variant, r) / r.ms - 1));
  std::sort(errors.begin(), errors.end());
  return {errors[errors.size() / 2], errors.back()};
}

std::string fit_variant(nlohmann::json& cost, const std::string& variant, const std::vector<CostRow>& rows, std::vector<std::string>& fitted) {
  const std::vector<std::string> names = terms_to_fit(cost[variant], rows);
  const std::string list = comma_list(names);
  const std::string on = std::to_string(rows.size()) + " timings";
  if (names.empty() || rows.size() < names.size())
    return variant + ": kept (" + on + " for " + std::to_string(names.size()) + " terms to fit" + (list.empty() ? "" : ": " + list) + ")";
  const nlohmann::json before = cost;
  // Row i divided by its time: minimizing Σ (a_i·c / t_i - (1 - fixed_i / t_i))² is the
  // relative-error fit of what is left once the launch and the front are taken off.
  std::vector<std::vector<double>> a;
  std::vector<double> y;
  for (const CostRow& r : rows) {
    const double fixed = front_priced(cost[variant], r) + cost[variant].value(kLaunch, 0.0) * r.terms->value(kLaunch, 0.0);
    std::vector<double> row;
    for (const std::string& name : names) row.push_back(r.terms->value(name, 0.0) / r.ms);
    a.push_back(std::move(row));
    y.push_back(1 - fixed / r.ms);
  }
  const std::vector<double> c = nonnegative_least_squares(a, y);
  std::vector<std::string> zero;  // coefficients the fit held at 0: the timings leave nothing for those terms to cost
  for (std::size_t j = 0; j < names.size(); ++j) {
    cost[variant][names[j]] = c[j];
    fitted.push_back(variant + " " + names[j]);
    if (c[j] == 0) zero.push_back(names[j]);
  }
  const auto [median_before, worst_before] = relative_errors(before, variant, rows);
  const auto [median_after, worst_after] = relative_errors(cost, variant, rows);
  return variant + ": fitted " + list + " on " + on + ": |predicted/measured - 1| median " + format_number("%.3g", median_before) + " -> " +
         format_number("%.3g", median_after) + ", worst " + format_number("%.3g", worst_before) + " -> " +
         format_number("%.3g", worst_after) + (zero.empty() ? "" : "; zero: " + comma_list(zero));
}

}  // namespace sparsejit::tuner
