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

ForcedChoice parse_force(const std::string& spec) {
  const auto first = spec.find(':');
  if (first == std::string::npos || first == 0 || first + 1 == spec.size())
    throw InvalidInputError("SPARSEJIT_FORCE '" + spec + "': expected op:variant[:key=value,...]");
  ForcedChoice choice{parse_op(spec.substr(0, first)), {}, nlohmann::json::object()};
  const auto second = spec.find(':', first + 1);
  choice.variant = spec.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (choice.variant.empty()) throw InvalidInputError("SPARSEJIT_FORCE '" + spec + "': empty variant name");
  if (second == std::string::npos) return choice;
  std::string rest = spec.substr(second + 1);
  std::size_t pos = 0;
  while (pos <= rest.size()) {
    const auto comma = rest.find(',', pos);
    const std::string item = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidInputError("SPARSEJIT_FORCE '" + spec + "': parameter '" + item + "' is not key=value");
    choice.params[item.substr(0, eq)] = parse_value(item.substr(eq + 1));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return choice;
}


}  // namespace sparsejit
