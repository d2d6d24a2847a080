// The registered variants of any op as plain data, for the code that lists or iterates them
// without an op's definition types: `explain --list`, `bench`'s forced candidates, the tuner's
// measurement options and training leaves.
#pragma once
#include <string>
#include <vector>

#include "sparsejit/decision.hpp"
#include "variants/registry.hpp"

namespace sparsejit::variants {

struct VariantInfo {
  std::string name;
  std::string summary;
  Traits traits;
};

// Every variant of `op` in registry order.
std::vector<VariantInfo> catalog(Op op);

// The one vendor variant of `op` (Traits::vendor): measured selection's floor.
std::string vendor_variant(Op op);

// Flags of a variant as words for listings ("vendor", "reused patterns only", "sm_XYa",
// "not a tree leaf"), or "" when it has none.
std::string describe_traits(const Traits& traits);

}  // namespace sparsejit::variants
