// Every documented variant of the SDDMM templates (sddmm_coo_flat.cu, sddmm_tiled.cu, sddmm_row.cu,
// sddmm_dense_tile.cu) renders
// and compiles with NVRTC for sm_80 and sm_90 (no GPU needed), and the sections the planner
// drives select the code they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::jit {
namespace {

using nlohmann::json;

struct Variant {
  std::string label;
  KernelSpec spec;
};

std::vector<Variant> coo_flat_variants() {
  std::vector<Variant> out;
  for (const std::string value_t : {"float", "double"}) {
    for (bool vec : {false, true}) {
      for (const auto& [group, per] : std::vector<std::pair<int, int>>{{1, 1}, {4, 4}, {8, 2}, {32, 4}}) {
        json params = {{"value_t", value_t}, {"acc_t", value_t}, {"group_size", group}, {"nnz_per_group", per},
                       {"block_size", 256}, {"vec4", vec}, {"fp16", false}, {"bf16", false}};
        if (vec) params.update({{"vec_t", value_t == "float" ? "float4" : "double2"}, {"vec_width", value_t == "float" ? 4 : 2}});
        out.push_back({value_t + (vec ? " vec" : " scalar") + " group=" + std::to_string(group) + " per=" + std::to_string(per),
                       KernelSpec{"sddmm_coo_flat.cu", "sddmm_flat_" + std::to_string(out.size()), params, {}}});
      }
    }
  }
  return out;
}

json tiled_params(const std::string& value_t, int width, int group, int slice, bool reindexed, bool lane_atomic,
                  bool store_result, int batch = 4) {
  const bool f64 = value_t == "double";
  const std::string vec_t = width == 1 ? value_t : (f64 ? "double2" : "float4");
  return {{"value_t", value_t}, {"acc_t", value_t}, {"vec_t", vec_t}, {"vec_width", width}, {"block_size", 256},
          {"tile_cols", 64}, {"slice", slice}, {"group_size", group}, {"lane_vectors", slice / (width * group)},
          {"batch", batch}, {"reindexed", reindexed}, {"lane_atomic", lane_atomic}, {"group_reduce", !lane_atomic},
          {"store_result", store_result}, {"fp16", false}, {"bf16", false}};
}

std::vector<Variant> tiled_variants() {
  std::vector<Variant> out;
  for (const std::string value_t : {"float", "double"}) {
    const int widest = value_t == "float" ? 4 : 2;
    for (int width : {1, widest}) {
      for (int group : {1, 4, 32}) {
        const int slice = width * group * 2;
        for (bool reindexed : {false, true}) {
          for (int combine = 0; combine < 3; ++combine) {  // atomic lanes, reduce + atomic, reduce + store
            const int batch = reindexed ? 1 : 4;  // both batch sizes over every combination of the others
            const json params = tiled_params(value_t, width, group, slice, reindexed, combine == 0, combine == 2, batch);
            out.push_back({value_t + " width=" + std::to_string(width) + " group=" + std::to_string(group) +
                               (reindexed ? " reindexed" : " plain") + " combine=" + std::to_string(combine) +
                               " batch=" + std::to_string(batch),
                           KernelSpec{"sddmm_tiled.cu", "sddmm_tiled_" + std::to_string(out.size()), params, {}}});
          }
        }
      }
    }
  }
  // An odd slice (K = 3 with scalar loads and one lane): no power-of-two assumption.
  out.push_back({"float slice=3", KernelSpec{"sddmm_tiled.cu", "sddmm_tiled_odd", tiled_params("float", 1, 1, 3, false, false, true), {}}});
  return out;
}

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

void expect_compiles(const Variant& v) {
  const std::string source = render(v.spec);
  EXPECT_EQ(source.find("{{"), std::string::npos) << v.label;
  for (int sm : {80, 90}) {
    const CompileResult result = compile_to_cubin(source, v.spec.template_name, sm, normalize_options({}));
    EXPECT_TRUE(is_elf(result.cubin)) << v.label << " sm_" << sm;
    const std::string name = v.spec.kernel_name;
    EXPECT_NE(std::search(result.cubin.begin(), result.cubin.end(), name.begin(), name.end()), result.cubin.end())
        << v.label << ": entry point missing";
  }
}

TEST(SddmmTemplates, CooFlatVariantsCompileForSm80AndSm90) {
  for (const auto& v : coo_flat_variants()) expect_compiles(v);
}

TEST(SddmmTemplates, TiledVariantsCompileForSm80AndSm90) {
  for (const auto& v : tiled_variants()) expect_compiles(v);
}

TEST(SddmmTemplates, TiledSectionsSelectTheirCode) {
  const std::string plain = render({"sddmm_tiled.cu", "k", tiled_params("float", 4, 4, 32, false, true, false), {}});
  EXPECT_NE(plain.find("const long long b_row = col0 + j;"), std::string::npos);
  EXPECT_EQ(plain.find("staged_cols[col0 + j]"), std::string::npos);
  EXPECT_NE(plain.find("atomicAdd"), std::string::npos);
  EXPECT_EQ(plain.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_NE(plain.find("typedef float4 vec_t;"), std::string::npos);

  const std::string reindexed = render({"sddmm_tiled.cu", "k", tiled_params("double", 2, 4, 16, true, false, true), {}});
  EXPECT_NE(reindexed.find("staged_cols[col0 + j]"), std::string::npos);
  EXPECT_NE(reindexed.find("__shfl_xor_sync"), std::string::npos);
  EXPECT_NE(reindexed.find("p[pos[u]] = "), std::string::npos);
  EXPECT_EQ(reindexed.find("atomicAdd"), std::string::npos);  // one slice, reduced: plain stores only
}

TEST(SddmmTemplates, InconsistentLaneVectorsFailToCompile) {
  json params = tiled_params("float", 4, 4, 32, false, true, false);
  params["lane_vectors"] = 3;  // 3 * 4 * 4 != 32: the static_assert must catch it
  const std::string source = render({"sddmm_tiled.cu", "bad", params, {}});
  EXPECT_ANY_THROW(compile_to_cubin(source, "sddmm_tiled.cu", 90, normalize_options({})));
}

// explain plans and compiles the kernel the executor would launch, with the executor's own
// spec builders: the tree's choice for each density, and the tiled variants when forced.
TEST(SddmmTemplates, ExplainCompilesThePlannedKernelOfEachVariant) {
  ::setenv("SPARSEJIT_CACHE_DIR", "", 1);  // memory cache only: nothing written outside the test
  const Csr<double> dense = generate::uniform(512, 512, 100, 1);      // 20%
  const Csr<double> medium = generate::uniform(3000, 3000, 30, 3);    // 1%
  const Csr<double> sparse = generate::uniform(30000, 30000, 2, 2);   // 0.0067%, 2 per row
  Options many;
  many.reuse = Reuse::Many;
  Options tiled;
  tiled.variant = "tiled_shared";
  Options reindexed = many;
  reindexed.variant = "reindexed_tiled";
  Options dense_tile;
  dense_tile.variant = "dense_tile";
  Options dense_mma;
  dense_mma.variant = "dense_mma";
  Options panel;
  panel.variant = "panel_gather";
  Options dense_wgmma;
  dense_wgmma.variant = "dense_wgmma";
  // variant nullptr: the shipped tree's leaf for the decision's features.
  struct Case { const Csr<double>* m; int32_t k; DType t; Options o; const char* variant; };
  for (const Case& c : {Case{&dense, 32, DType::F32, {}, nullptr}, Case{&dense, 33, DType::F64, {}, nullptr},
                        Case{&dense, 512, DType::F32, many, nullptr}, Case{&medium, 32, DType::F32, {}, nullptr},
                        Case{&medium, 512, DType::F64, {}, nullptr}, Case{&medium, 3, DType::F32, {}, nullptr},
                        Case{&sparse, 3, DType::F32, {}, nullptr}, Case{&sparse, 100, DType::F64, many, nullptr},
                        Case{&dense, 64, DType::F32, dense_tile, "dense_tile"},
                        Case{&dense, 33, DType::F32, dense_mma, "dense_mma"},
                        Case{&dense, 100, DType::F32, dense_wgmma, "dense_wgmma"},
                        Case{&dense, 33, DType::F32, dense_wgmma, "dense_wgmma"},
                        Case{&medium, 128, DType::F32, panel, "panel_gather"}, Case{&dense, 3, DType::F64, panel, "panel_gather"},
                        Case{&dense, 128, DType::F32, tiled, "tiled_shared"}, Case{&medium, 33, DType::F64, reindexed, "reindexed_tiled"}}) {
    const Decision d = explain_sddmm(c.m->pattern(), c.k, c.t, c.o);
    if (c.variant) {
      EXPECT_EQ(d.variant, c.variant) << c.k;
    } else {  // the shipped model's choice: the cheapest eligible candidate
      const auto chosen =
          std::find_if(d.candidates.begin(), d.candidates.end(), [&](const Candidate& x) { return x.variant == d.variant; });
      ASSERT_NE(chosen, d.candidates.end());
      for (const auto& other : d.candidates) {
        if (other.rejected_because.empty()) {
          EXPECT_LE(chosen->predicted_ms, other.predicted_ms) << other.variant;
        }
      }
    }
    EXPECT_NE(d.kernel_origin, KernelOrigin::None) << c.variant << " k=" << c.k;
  }
}

// ---------------------------------------------------------------------------------------
// row_gather (sddmm_row.cu), panel_gather (sddmm_row_panels.cu) and dense_tile
// (sddmm_dense_tile.cu).

json row_params(const std::string& value_t, int width, int group, int lane_vectors, int unroll) {
  const bool f64 = value_t == "double";
  return {{"value_t", value_t}, {"acc_t", value_t}, {"vec_t", width == 1 ? value_t : (f64 ? "double2" : "float4")},
          {"vec_width", width}, {"group_size", group}, {"lane_vectors", lane_vectors}, {"unroll", unroll},
          {"block_size", 256}, {"fp16", false}, {"bf16", false}};
}

json dense_params(const std::string& value_t, int width, int ti, int tj, int mi, int mj, int slice, int stages = 1) {
  return {{"value_t", value_t}, {"acc_t", value_t}, {"run_t", value_t == "double" ? "double2" : "float4"},
          {"vec_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"words", (tj + 63) / 64}, {"slice", slice},
          {"stages", stages}, {"micro_rows", mi}, {"micro_cols", mj}, {"block_size", (ti / mi) * (tj / mj)},
          {"min_blocks", 2}, {"fp16", false}, {"bf16", false}};
}

json mma_params(int width, int ti, int tj, int wr, int wc, int slice, int stages) {
  return {{"vec_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"words", (tj + 63) / 64}, {"slice", slice},
          {"stages", stages}, {"warp_rows", wr}, {"warp_cols", wc}, {"block_size", 32 * (ti / wr) * (tj / wc)},
          {"min_blocks", 2}, {"fp16", false}, {"bf16", false}};
}

TEST(SddmmTemplates, RowAndPanelGatherVariantsCompileForSm80AndSm90) {
  std::vector<Variant> out;
  for (const std::string value_t : {"float", "double"}) {
    const int widest = value_t == "float" ? 4 : 2;
    for (int width : {1, widest}) {
      for (const auto& [group, lane_vectors, unroll] :
           std::vector<std::array<int, 3>>{{4, 1, 1}, {4, 1, 4}, {8, 1, 8}, {8, 3, 4}, {16, 2, 2}, {32, 16, 1}, {32, 4, 8}}) {
        for (const std::string file : {"sddmm_row.cu", "sddmm_row_panels.cu"})
          out.push_back({file + " " + value_t + " width=" + std::to_string(width) + " group=" + std::to_string(group) +
                             " vectors=" + std::to_string(lane_vectors) + " unroll=" + std::to_string(unroll),
                         KernelSpec{file, "sddmm_row_" + std::to_string(out.size()),
                                    row_params(value_t, width, group, lane_vectors, unroll), {}}});
      }
    }
  }
  for (const auto& v : out) expect_compiles(v);
}

TEST(SddmmTemplates, DenseTileVariantsCompileForSm80AndSm90) {
  std::vector<Variant> out;
  for (const std::string value_t : {"float", "double"}) {
    const int widest = value_t == "float" ? 4 : 2;
    for (int width : {1, widest}) {
      for (const auto& [ti, tj, mi, mj] : std::vector<std::array<int, 4>>{
               {64, 64, 4, 4}, {128, 64, 8, 4}, {64, 128, 4, 8}, {32, 32, 4, 4}, {128, 128, 8, 8}, {256, 32, 8, 4}}) {
        const int run = value_t == "float" ? 4 : 2;
        for (const auto& [slice, stages] : std::vector<std::pair<int, int>>{{run * 3, 3}, {16, 1}, {32, 2}, {8, 4}}) {
          out.push_back({value_t + " width=" + std::to_string(width) + " tile=" + std::to_string(ti) + "x" +
                             std::to_string(tj) + " micro=" + std::to_string(mi) + "x" + std::to_string(mj) +
                             " slice=" + std::to_string(slice) + " stages=" + std::to_string(stages),
                         KernelSpec{"sddmm_dense_tile.cu", "sddmm_dense_" + std::to_string(out.size()),
                                    dense_params(value_t, width, ti, tj, mi, mj, slice, stages), {}}});
        }
      }
    }
  }
  for (const auto& v : out) expect_compiles(v);
}

TEST(SddmmTemplates, DenseMmaVariantsCompileForSm80AndSm90) {
  std::vector<Variant> out;
  for (int width : {1, 4})
    for (const auto& [ti, tj, wr, wc] : std::vector<std::array<int, 4>>{
             {64, 64, 32, 32}, {128, 64, 64, 32}, {64, 128, 32, 64}, {128, 128, 64, 64}, {32, 256, 16, 64}, {16, 8, 16, 8}})
      for (const auto& [slice, stages] : std::vector<std::pair<int, int>>{{8, 1}, {24, 3}, {32, 2}, {64, 4}}) {
        if (width == 1 && slice > 24) continue;  // scalar copies: the short slices suffice
        out.push_back({"width=" + std::to_string(width) + " tile=" + std::to_string(ti) + "x" + std::to_string(tj) +
                           " warp=" + std::to_string(wr) + "x" + std::to_string(wc) + " slice=" + std::to_string(slice) +
                           " stages=" + std::to_string(stages),
                       KernelSpec{"sddmm_dense_mma.cu", "sddmm_mma_" + std::to_string(out.size()),
                                  mma_params(width, ti, tj, wr, wc, slice, stages), {}}});
      }
  for (const auto& v : out) expect_compiles(v);
  // The TF32 tensor-core instruction, its ldmatrix fragment reads and the ring's stage count
  // are in the rendered source.
  const std::string source = render({"sddmm_dense_mma.cu", "k", mma_params(4, 64, 64, 32, 32, 32, 3), {}});
  EXPECT_NE(source.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  EXPECT_NE(source.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos);
  EXPECT_NE(source.find("constexpr int kStages = 3;"), std::string::npos);
}

TEST(SddmmTemplates, RowGatherAndDenseTileStaticChecksCatchBadParams) {
  const auto fails = [](const std::string& name, const json& params) {
    const std::string source = render({name, "bad", params, {}});
    EXPECT_ANY_THROW(compile_to_cubin(source, name, 90, normalize_options({}))) << params.dump();
  };
  fails("sddmm_row.cu", row_params("float", 4, 4, 1, 8));   // unroll > group_size
  fails("sddmm_row.cu", row_params("float", 4, 6, 1, 2));   // group_size not a power of two
  json wrong_threads = dense_params("float", 4, 64, 64, 4, 4, 32);
  wrong_threads["block_size"] = 128;  // 16 x 16 micro-tiles need 256 threads
  fails("sddmm_dense_tile.cu", wrong_threads);
  json wrong_words = dense_params("float", 4, 64, 128, 4, 8, 32);
  wrong_words["words"] = 1;
  fails("sddmm_dense_tile.cu", wrong_words);
  fails("sddmm_dense_tile.cu", dense_params("float", 1, 32, 32, 4, 4, 6));     // not whole 16-byte runs
  fails("sddmm_dense_tile.cu", dense_params("float", 4, 32, 32, 4, 4, 16, 5));  // stages past 4
  json mma_threads = mma_params(4, 64, 64, 32, 32, 32, 2);
  mma_threads["block_size"] = 256;  // 2 x 2 warp parts need 128 threads
  fails("sddmm_dense_mma.cu", mma_threads);
  fails("sddmm_dense_mma.cu", mma_params(4, 64, 64, 32, 32, 12, 2));  // not whole mma steps
  fails("sddmm_dense_mma.cu", mma_params(4, 48, 64, 24, 32, 32, 2));  // warp rows not whole m16 steps
  fails("sddmm_dense_mma.cu", mma_params(4, 64, 64, 32, 32, 32, 5));  // stages past 4
}

TEST(SddmmTemplates, RowGatherReducesWithATransposedButterflyAndStoresPlainly) {
  const std::string source = render({"sddmm_row.cu", "k", row_params("float", 4, 8, 1, 8), {}});
  EXPECT_NE(source.find("constexpr int kUnroll = 8;"), std::string::npos);
  EXPECT_NE(source.find("typedef float4 vec_t;"), std::string::npos);
  EXPECT_EQ(source.find("atomicAdd"), std::string::npos);
  EXPECT_NE(source.find("p[mine] = "), std::string::npos);
  const std::string dense = render({"sddmm_dense_tile.cu", "k", dense_params("double", 2, 64, 64, 4, 4, 32), {}});
  EXPECT_NE(dense.find("constexpr int kWords = 1;"), std::string::npos);
  EXPECT_NE(dense.find("constexpr int kStages = 1;"), std::string::npos);
  const std::string pipelined = render({"sddmm_dense_tile.cu", "k", dense_params("float", 4, 64, 64, 4, 4, 16, 3), {}});
  EXPECT_NE(pipelined.find("constexpr int kStages = 3;"), std::string::npos);
  EXPECT_NE(dense.find("typedef double2 run_t;"), std::string::npos);
  EXPECT_EQ(dense.find("atomicAdd"), std::string::npos);
}

}  // namespace
}  // namespace sparsejit::jit
