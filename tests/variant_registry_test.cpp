// The variant registries against the shipped models, and the SpMM definitions' own promises:
// a registered variant without a cost entry would be priced infinite and never chosen, and a
// model naming an unregistered variant prices nothing; a search-space entry must run forced.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "models/model_store.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "variants/catalog.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit {
namespace {

std::set<std::string> keys_of(const nlohmann::json& object) {
  std::set<std::string> keys;
  for (const auto& [key, _] : object.items()) keys.insert(key);
  return keys;
}

TEST(VariantRegistry, EverySpmmVariantIsPricedByTheShippedModelAndNoOtherIs) {
  const std::vector<std::string> names = plan::spmm_variants();
  const std::set<std::string> registered(names.begin(), names.end());
  EXPECT_EQ(registered.size(), names.size()) << "a name is registered twice";
  EXPECT_EQ(keys_of(models::shipped_model("spmm").at("cost")), registered);
}

TEST(VariantRegistry, EverySddmmVariantIsPricedByTheShippedModelAndItsLaunchNamesOnlyRegisteredOnes) {
  const std::vector<std::string> names = plan::sddmm_variants();
  const std::set<std::string> registered(names.begin(), names.end());
  EXPECT_EQ(registered.size(), names.size()) << "a name is registered twice";
  const nlohmann::json& model = models::shipped_model("sddmm");
  EXPECT_EQ(keys_of(model.at("cost")), registered);
  for (const std::string& variant : keys_of(model.at("launch")))
    EXPECT_TRUE(registered.count(variant)) << "models/sddmm.json launch names '" << variant << "'";
}

TEST(VariantRegistry, EverySpgemmVariantIsPricedByTheShippedModelAndNoOtherIs) {
  const std::vector<std::string> names = plan::spgemm_variants();
  const std::set<std::string> registered(names.begin(), names.end());
  EXPECT_EQ(registered.size(), names.size()) << "a name is registered twice";
  const nlohmann::json& model = models::shipped_model("spgemm");
  EXPECT_EQ(keys_of(model.at("cost")), registered);
}

// One process using every op's registry registers each variant once (registration fills all
// registries at once, on the first use of any); each op has its one vendor variant.
TEST(VariantRegistry, EveryOpsCatalogListsEachVariantOnceInOneProcess) {
  for (Op op : {Op::SDDMM, Op::SpMM, Op::SpGEMM, Op::SDDMM}) {
    std::set<std::string> names;
    int vendors = 0;
    for (const variants::VariantInfo& v : variants::catalog(op)) {
      EXPECT_TRUE(names.insert(v.name).second) << to_string(op) << " lists " << v.name << " twice";
      vendors += v.traits.vendor;
    }
    EXPECT_EQ(vendors, 1) << to_string(op);
    EXPECT_EQ(variants::vendor_variant(op), "cusparse");
  }
}

TEST(VariantRegistry, SpmmDefinitionsAreOrderedNamedAndDescribed) {
  const auto& all = variants::SpmmRegistry::all();
  ASSERT_FALSE(all.empty());
  int vendors = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_FALSE(all[i]->summary.empty()) << all[i]->name;
    if (i > 0) {
      EXPECT_LT(all[i - 1]->rank, all[i]->rank) << all[i]->name << " shares a rank";
    }
    EXPECT_EQ(variants::SpmmRegistry::find(all[i]->name), all[i]);
    vendors += all[i]->traits.vendor;
  }
  EXPECT_EQ(vendors, 1);  // measured selection's floor
  EXPECT_EQ(variants::SpmmRegistry::find("no_such_variant"), nullptr);
}

// Each search-space entry is complete and valid: forcing it plans exactly those parameters.
TEST(VariantRegistry, EverySpmmSearchSpaceEntryRunsForced) {
  const Csr<double> a = generate::from_spec("clustered:2000:12:0.25:16", 5);
  const Features f = inspect(a.pattern());
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(a.pattern(), w, t); };
  for (const plan::SpmmProblem& problem : {plan::SpmmProblem{32, DType::F32, false}, plan::SpmmProblem{100, DType::F64, true}}) {
    const auto space = plan::spmm_search_space(f, problem, {});
    std::set<std::string> seen;
    for (const auto& [variant, params] : space) {
      Options o;
      o.variant = variant;
      o.params = params;
      const Decision d = plan::plan_spmm(f, problem, {}, o, split);
      EXPECT_EQ(d.params, params) << variant;
      seen.insert(variant);
    }
    EXPECT_TRUE(seen.count("cusparse"));
    EXPECT_EQ(seen.count("csr_rowsplit"), problem.transpose_a ? 0u : 1u);
  }
}

TEST(VariantRegistry, ForcedParametersOutsideTheirRangeAreRefusedNamingTheValue) {
  const Features f = inspect(generate::from_spec("uniform:500:8", 1).pattern());
  Options o;
  o.variant = "csr_rowwarp";
  for (int warps : {0, 100000}) {
    o.params = {{"warps_per_block", warps}};
    try {
      plan::plan_spmm(f, {32, DType::F32, false}, {}, o);
      ADD_FAILURE() << "warps_per_block = " << warps << " was accepted";
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find("warps_per_block = " + std::to_string(warps)), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sparsejit
