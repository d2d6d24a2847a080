#include <cstdlib>

#include "sparsejit/error.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit {

namespace {

nlohmann::json parse_value(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  char* end = nullptr;
  const long long integer = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0') return integer;
  const double number = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0') return number;
  return text;
}

}  // namespace

ForcedChoice parse_variant_choice(Op op, const std::string& text, const std::string& source) {
  const auto colon = text.find(':');
  ForcedChoice choice{op, text.substr(0, colon), nlohmann::json::object()};
  if (choice.variant.empty()) throw InvalidInputError(source + ": empty variant name");
  if (colon == std::string::npos) return choice;
  const std::string rest = text.substr(colon + 1);
  std::size_t pos = 0;
  while (pos <= rest.size()) {
    const auto comma = rest.find(',', pos);
    const std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw InvalidInputError(source + ": parameter '" + item + "' is not key=value");
    choice.params[item.substr(0, eq)] = parse_value(item.substr(eq + 1));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return choice;
}

ForcedChoice parse_force(const std::string& spec) {
  const std::string source = "SPARSEJIT_FORCE '" + spec + "'";
  const auto first = spec.find(':');
  if (first == std::string::npos || first == 0 || first + 1 == spec.size())
    throw InvalidInputError(source + ": expected op:variant[:key=value,...]");
  return parse_variant_choice(parse_op(spec.substr(0, first)), spec.substr(first + 1), source);
}

}  // namespace sparsejit
