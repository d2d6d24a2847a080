#include "variants/catalog.hpp"

#include "sparsejit/error.hpp"
#include "variants/sddmm/sddmm_variant.hpp"
#include "variants/spamm/spamm_variant.hpp"
#include "variants/spgemm/spgemm_variant.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit::variants {

namespace {

template <class Registry>
std::vector<VariantInfo> infos() {
  std::vector<VariantInfo> out;
  for (const auto* v : Registry::all()) out.push_back({v->name, v->summary, v->traits});
  return out;
}

}  // namespace

std::vector<VariantInfo> catalog(Op op) {
  switch (op) {
    case Op::SpMM: return infos<SpmmRegistry>();
    case Op::SDDMM: return infos<SddmmRegistry>();
    case Op::SpGEMM: return infos<SpgemmRegistry>();
    case Op::SpAMM: return infos<SpammRegistry>();
  }
  throw InvalidInputError("catalog: unknown op");
}

std::string vendor_variant(Op op) {
  for (const VariantInfo& v : catalog(op))
    if (v.traits.vendor) return v.name;
  throw UnsupportedError(std::string(to_string(op)) + " has no vendor variant registered");
}

std::string describe_traits(const Traits& traits) {
  std::string words;
  const auto add = [&](bool on, const char* word) {
    if (on) words += (words.empty() ? "" : ", ") + std::string(word);
  };
  add(traits.vendor, "vendor");
  add(traits.needs_reuse, "reused patterns only");
  add(traits.arch_specific, "sm_XYa");
  add(!traits.tree_leaf, "not a tree leaf");
  return words;
}

}  // namespace sparsejit::variants
