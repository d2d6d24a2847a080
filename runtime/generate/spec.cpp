// Generator specs ("band:200000:64:256") as used by the CLI and the benchmarks.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

class SpecReader;

// One accepted form: its kind, the names of its fields after the kind (the last `optional` of
// them may be left out), and how to build it.
struct SpecForm {
  const char* kind;
  std::vector<const char*> fields;
  std::size_t optional;
  const char* meaning;
  // The most rows or columns and the most entries the spec asks for, checked against the
  // limit before building.
  int64_t (*longest_side)(const SpecReader& fields);
  int64_t (*entries)(const SpecReader& fields);
  Csr<double> (*build)(const SpecReader& fields, uint64_t seed);
};

const std::vector<SpecForm>& spec_forms();

std::size_t required_fields(const SpecForm& form) { return form.fields.size() - form.optional; }

std::string usage(const SpecForm& form) {
  std::string text = form.kind;
  for (std::size_t i = 0; i < form.fields.size(); ++i)
    text += (i < required_fields(form) ? ":" : "[:") + std::string(form.fields[i]);
  return text + std::string(form.optional, ']');
}

std::string expected_count(const SpecForm& form) {
  if (form.optional == 0) return std::to_string(form.fields.size());
  return std::to_string(required_fields(form)) + " to " + std::to_string(form.fields.size());
}

std::vector<std::string> split_fields(const std::string& spec) {
  std::vector<std::string> fields(1);
  for (char ch : spec) {
    if (ch == ':') fields.emplace_back();
    else fields.back() += ch;
  }
  return fields;
}

// Reads the fields of one spec, each error naming the spec and the field.
class SpecReader {
 public:
  SpecReader(const std::string& spec, const SpecForm& form, std::vector<std::string> values)
      : spec_(spec), form_(form), values_(std::move(values)) {}

  int32_t integer(std::size_t index) const {
    const std::string& text = values_[index];
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      fail(index, "is not an integer");
    if (value < 0) fail(index, "must not be negative");
    if (value > std::numeric_limits<int32_t>::max()) fail(index, "exceeds 2147483647");
    return int32_t(value);
  }

  int64_t wide_integer(std::size_t index) const {
    const std::string& text = values_[index];
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      fail(index, "is not an integer");
    if (value < 0) fail(index, "must not be negative");
    return value;
  }

  double number(std::size_t index) const {
    const std::string& text = values_[index];
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) fail(index, "is not a number");
    if (!std::isfinite(value)) fail(index, "is not finite");
    return value;
  }

  double fraction(std::size_t index) const {
    const double value = number(index);
    if (!(value >= 0.0 && value <= 1.0)) fail(index, "is outside [0, 1]");
    return value;
  }

  // Whether an optional field was given.
  bool has(std::size_t index) const { return index < values_.size(); }

 private:
  [[noreturn]] void fail(std::size_t index, const std::string& problem) const {
    throw InvalidInputError("generator spec \"" + spec_ + "\": field " + form_.fields[index] + " = \"" +
                            values_[index] + "\" " + problem + " (form " + usage(form_) + ")");
  }

  const std::string& spec_;
  const SpecForm& form_;
  std::vector<std::string> values_;
};

int64_t first_field(const SpecReader& f) { return f.integer(0); }
int64_t first_times_second(const SpecReader& f) { return int64_t(f.integer(0)) * f.integer(1); }

// Without A the default quadrants exactly; with it, b, c and d keep the default's proportions
// 19:19:5, so that A = 0.57 gives the default again.
Csr<double> build_rmat(const SpecReader& f, uint64_t seed) {
  if (!f.has(2)) return rmat(f.integer(0), f.wide_integer(1), seed);
  const double a = f.fraction(2), side = (1.0 - a) * 19.0 / 43.0;
  return rmat(f.integer(0), f.wide_integer(1), seed, a, side, side);
}

void check_size(const std::string& spec, const SpecForm& form, const SpecReader& reader, int64_t max_entries) {
  if (max_entries <= 0) return;
  for (const auto& [what, count] : {std::pair{"rows or columns", form.longest_side(reader)}, std::pair{"entries", form.entries(reader)}})
    if (count > max_entries)
      throw InvalidInputError("generator spec \"" + spec + "\": " + std::to_string(count) + " " + what +
                              ", over the limit of " + std::to_string(max_entries) +
                              " (SPARSEJIT_MAX_GENERATED_ENTRIES raises it in the CLI)");
}

const std::vector<SpecForm>& spec_forms() {
  static const std::vector<SpecForm> forms = {
      {"uniform", {"N", "R"}, 0, "N×N, R distinct uniform columns per row", first_field, first_times_second,
       [](const SpecReader& f, uint64_t seed) { return uniform(f.integer(0), f.integer(0), f.integer(1), seed); }},
      {"rect", {"M", "N", "R"}, 0, "M×N, R distinct uniform columns per row (pruned weight matrices: few rows, long rows)",
       [](const SpecReader& f) { return std::max<int64_t>(f.integer(0), f.integer(1)); },
       [](const SpecReader& f) { return int64_t(f.integer(0)) * f.integer(2); },
       [](const SpecReader& f, uint64_t seed) { return uniform(f.integer(0), f.integer(1), f.integer(2), seed); }},
      {"band", {"N", "R", "H"}, 0, "N×N, R draws per row from columns [i-H, i+H), duplicates merged", first_field,
       first_times_second,
       [](const SpecReader& f, uint64_t seed) { return banded(f.integer(0), f.integer(1), f.integer(2), seed); }},
      {"rmat", {"N", "EDGES", "A"}, 1,
       "N×N R-MAT power-law graph (a=0.57 b=0.19 c=0.19; with A: a=A, b=c=(1-A)·19/43, a larger A a heavier tail), "
       "duplicates merged",
       first_field, [](const SpecReader& f) { return f.wide_integer(1); }, build_rmat},
      {"chunglu", {"N", "NNZ", "GAMMA"}, 0,
       "N×N Chung-Lu power-law graph, about NNZ nonzeros, degree exponent GAMMA > 2 (e.g. 2.1 to 3), heaviest rows first",
       first_field, [](const SpecReader& f) { return f.wide_integer(1); },
       [](const SpecReader& f, uint64_t seed) { return chung_lu(f.integer(0), f.wide_integer(1), f.number(2), seed); }},
      {"clustered", {"N", "R", "FRAC", "RUN"}, 0, "N×N, R per row, FRAC of them in RUN-column runs shared by 32-row groups",
       first_field, first_times_second,
       [](const SpecReader& f, uint64_t seed) {
         return clustered(f.integer(0), f.integer(0), f.integer(1), f.fraction(2), f.integer(3), seed);
       }},
      {"blockdiag", {"N", "B", "NOISE"}, 0, "N×N, dense B×B diagonal blocks plus NOISE uniform columns per row", first_field,
       [](const SpecReader& f) { return int64_t(f.integer(0)) * (int64_t(f.integer(1)) + f.integer(2)); },
       [](const SpecReader& f, uint64_t seed) { return block_diagonal(f.integer(0), f.integer(1), f.integer(2), seed); }},
  };
  return forms;
}

}  // namespace

Csr<double> from_spec(const std::string& spec, uint64_t seed, int64_t max_entries) {
  std::vector<std::string> fields = split_fields(spec);
  const std::string kind = fields.front();
  fields.erase(fields.begin());
  for (const SpecForm& form : spec_forms()) {
    if (kind != form.kind) continue;
    if (fields.size() < required_fields(form) || fields.size() > form.fields.size())
      throw InvalidInputError("generator spec \"" + spec + "\": " + std::to_string(fields.size()) + " fields after \"" +
                              kind + "\", expected " + expected_count(form) + " (form " + usage(form) + ")");
    const SpecReader reader(spec, form, std::move(fields));
    check_size(spec, form, reader, max_entries);
    try {
      return form.build(reader, seed);
    } catch (const InvalidInputError& e) {
      const std::string message = e.what();
      if (message.rfind("generator spec", 0) == 0) throw;
      throw InvalidInputError("generator spec \"" + spec + "\": " + message);
    }
  }
  std::string kinds;
  for (const SpecForm& form : spec_forms()) kinds += (kinds.empty() ? "" : ", ") + std::string(form.kind);
  throw InvalidInputError("generator spec \"" + spec + "\": unknown generator \"" + kind + "\" (expected one of " +
                          kinds + ")");
}

std::string spec_help() {
  std::string text;
  for (const SpecForm& form : spec_forms()) text += usage(form) + "  " + form.meaning + "\n";
  return text;
}

}  // namespace sparsejit::generate
