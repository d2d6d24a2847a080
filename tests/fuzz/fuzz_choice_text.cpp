// The strings a user types to steer a call: SPARSEJIT_FORCE values, --variant values, op and
// dtype names and generator specs. Each either parses or throws a sparsejit::Error; a parsed
// generator spec builds a valid matrix. Anything else is a finding.
//
// Input: newline-separated fields, each fed to every parser.
#include <cstdint>
#include <string>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/options.hpp"
#include "sparsejit/types.hpp"

namespace {

template <class F>
void expect_parse_or_error(F&& parse) {
  try {
    parse();
  } catch (const sparsejit::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string field = text.substr(start, end - start);
    start = end + 1;
    expect_parse_or_error([&] { sparsejit::parse_force(field); });
    expect_parse_or_error([&] { sparsejit::parse_variant_choice(sparsejit::Op::SDDMM, field, "--variant"); });
    expect_parse_or_error([&] { sparsejit::parse_op(field); });
    expect_parse_or_error([&] { sparsejit::parse_dtype(field); });
    // A limit of 4096 rows, columns and entries keeps a generated matrix small.
    expect_parse_or_error([&] { sparsejit::validate(sparsejit::generate::from_spec(field, 7, 4096)); });
  }
  return 0;
}
