// The registry of SDDMM variants (runtime/variants/sddmm/, CPU only): every definition is
// named, ranked and described, the candidate order and traits are the planner's, and the
// search spaces the planner builds from the definitions are valid when forced. (Their
// agreement with the shipped model: variant_registry_test.)
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "models/model_store.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "tuner/search_space.hpp"
#include "tuner/train.hpp"
#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit {
namespace {

using variants::SddmmRegistry;
using variants::SddmmVariant;

TEST(SddmmRegistry, EveryVariantHasAUniqueNameAndRankAndASummary) {
  std::set<std::string> names;
  std::set<int> ranks;
  for (const SddmmVariant* v : SddmmRegistry::all()) {
    EXPECT_TRUE(names.insert(v->name).second) << v->name << " registered twice";
    EXPECT_GT(v->rank, 0) << v->name;
    EXPECT_TRUE(ranks.insert(v->rank).second) << v->name << " shares rank " << v->rank;
    EXPECT_FALSE(v->summary.empty()) << v->name;
    EXPECT_EQ(&variants::sddmm_variant(v->name), v);
  }
  EXPECT_THROW(variants::sddmm_variant("nope"), InvalidInputError);
}

// The planner's candidates in the order they had before the registry (equal predicted costs
// go to the earlier one), and each variant's traits.
TEST(SddmmRegistry, OrderAndTraitsAreThePlannersOwn) {
  EXPECT_EQ(plan::sddmm_variants(), (std::vector<std::string>{"coo_flat", "row_gather", "panel_gather", "dense_tile", "dense_mma",
                                                              "dense_wgmma", "tiled_shared", "reindexed_tiled", "cusparse"}));
  for (const SddmmVariant* v : SddmmRegistry::all()) {
    EXPECT_EQ(v->traits.vendor, v->name == "cusparse") << v->name;
    EXPECT_EQ(v->traits.needs_reuse, v->name == "reindexed_tiled") << v->name;
    EXPECT_EQ(v->traits.tree_leaf, v->name != "reindexed_tiled") << v->name;
    EXPECT_EQ(v->traits.arch_specific, v->name == "dense_wgmma") << v->name;
    EXPECT_EQ(tuner::reuse_for(Op::SDDMM, v->name), v->traits.needs_reuse ? Reuse::Many : Reuse::Once) << v->name;
  }
  EXPECT_EQ(tuner::sddmm_tree_variants(), (std::vector<std::string>{"coo_flat", "row_gather", "panel_gather", "dense_tile",
                                                                    "dense_mma", "dense_wgmma", "tiled_shared", "cusparse"}));
}

// Every entry of a variant's search space is a complete parameter set (its defaults' keys),
// the planner keeps the ones the variant's check accepts, and forcing a kept one plans exactly
// it. On a 10% pattern at K = 128 (f32, sm_90) every variant contributes.
TEST(SddmmRegistry, SearchSpacesAreCompleteAndTheirKeptEntriesPassTheirChecks) {
  const Features dense10 = inspect(generate::uniform(4096, 4096, 410, 1).pattern());
  const Features sparse = inspect(generate::uniform(3000, 3000, 9, 2).pattern());
  const plan::DeviceTarget device;
  for (const Features* f : {&dense10, &sparse}) {
    for (const plan::SddmmProblem& problem : {plan::SddmmProblem{128, DType::F32, 128, 128}, plan::SddmmProblem{33, DType::F64, 33, 33},
                                              plan::SddmmProblem{512, DType::F32, 512, 512}}) {
      const variants::SddmmPlanInputs in{*f, problem, device, models::shipped_model("sddmm"), false};
      std::set<std::string> kept;
      for (const auto& [variant, params] : plan::sddmm_search_space(*f, problem, device)) kept.insert(variant + params.dump());
      std::set<std::string> contributing;
      for (const SddmmVariant* v : SddmmRegistry::all()) {
        const nlohmann::json defaults = v->defaults(in);
        for (const nlohmann::json& params : v->search_space(in)) {
          SCOPED_TRACE(v->name + " " + params.dump() + " k=" + std::to_string(problem.k));
          for (const auto& [key, _] : defaults.items()) EXPECT_TRUE(params.contains(key)) << key;
          for (const auto& [key, _] : params.items()) EXPECT_TRUE(defaults.contains(key)) << key;
          bool valid = true;
          try {
            v->check(problem, device, params);
          } catch (const Error&) {
            valid = false;
          }
          EXPECT_EQ(kept.count(v->name + params.dump()), valid ? 1u : 0u);
          if (!valid) continue;
          contributing.insert(v->name);
          Options o;
          o.variant = v->name;
          o.params = params;
          o.reuse = tuner::reuse_for(Op::SDDMM, v->name);
          EXPECT_EQ(plan::plan_sddmm(*f, problem, device, o).params, params);
        }
      }
      if (f == &dense10 && problem.k == 128) {
        EXPECT_EQ(contributing.size(), SddmmRegistry::all().size()) << "every variant measured on 10% at K = 128";
      }
    }
  }
}

}  // namespace
}  // namespace sparsejit
