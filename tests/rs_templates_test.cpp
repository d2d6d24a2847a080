// The RS-SpMM kernel templates (spmm_rs_light, spmm_rs_light_t, spmm_rs_heavy,
// spmm_rs_heavy_t), the nonzero-balanced csr_merge ones (spmm_csr_merge, spmm_csr_merge_t),
// csr_rowsplit's and csr_pipelined's:
// every variant the planner can ask for is rendered from a forced plan and compiled with NVRTC
// for sm_80 and sm_90 (no GPU needed): f32 and f64, 16-byte and scalar vectors, lanes 8/16/32
// with coarsening 1/2/4 and unroll 1/4/8, A·B and Aᵀ·B.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "variants/spmm/spmm_variant.hpp"
#include "plan/planner.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

// The kernels the executor loads for a decision: its variant's kernel specs.
std::vector<jit::KernelSpec> kernel_specs(const Decision& d, DType dtype, bool transpose) {
  return variants::SpmmRegistry::find(d.variant)->kernel_specs(d, {1, dtype, transpose});
}

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

bool contains(const std::vector<char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

struct Shape {
  int lanes, cf, unroll;
};

// A forced rs decision for one shape; the matrix only feeds the split statistics.
Decision forced_rs(DType dtype, int32_t k, bool transpose, int vec_width, const Shape& s) {
  const Csr<double> a = generate::clustered(512, 512, 16, 0.5, 8, 1);
  Options o;
  o.variant = "rs";
  o.params = {{"vec_width", vec_width}, {"lanes_per_row", s.lanes}, {"cf_h", s.cf}, {"unroll", s.unroll},
              {"heavy_lanes", s.lanes}, {"cf_v", s.cf}, {"heavy_unroll", s.unroll}};
  return plan::plan_spmm(inspect(a.pattern()), {k, dtype, transpose, k, k}, {}, o,
                         [&](int32_t w, int32_t t) { return row_segment_split(a.pattern(), w, t); });
}

void expect_compiles(const jit::KernelSpec& spec, const std::string& label) {
  const std::string source = jit::render(spec);
  EXPECT_EQ(source.find("{{"), std::string::npos) << label;
  EXPECT_NE(source.find("extern \"C\" __global__"), std::string::npos) << label;
  for (int sm : {80, 90}) {
    const jit::CompileResult result = jit::compile_to_cubin(source, spec.template_name, sm, jit::normalize_options({}));
    EXPECT_TRUE(is_elf(result.cubin)) << label << " sm_" << sm;
    EXPECT_TRUE(contains(result.cubin, spec.kernel_name)) << label << ": entry point missing from cubin";
  }
}

void compile_all(DType dtype) {
  const int vector = dtype == DType::F64 ? 2 : 4;
  for (bool transpose : {false, true}) {
    for (int vec_width : {vector, 1}) {
      for (const Shape& s : {Shape{8, 1, 1}, Shape{16, 2, 4}, Shape{32, 4, 8}}) {
        const Decision d = forced_rs(dtype, 128, transpose, vec_width, s);
        const auto specs = kernel_specs(d, dtype, transpose);
        ASSERT_EQ(specs.size(), 2u);
        const std::string label = std::string(to_string(dtype)) + (transpose ? " Aᵀ·B" : " A·B") + " vec=" +
                                  std::to_string(vec_width) + " lanes=" + std::to_string(s.lanes) + " cf=" +
                                  std::to_string(s.cf) + " unroll=" + std::to_string(s.unroll);
        for (const auto& spec : specs) expect_compiles(spec, label + " " + spec.template_name);
      }
    }
  }
}

TEST(RsTemplates, EveryTemplateIsKnown) {
  const auto names = jit::template_names();
  for (const char* expected : {"spmm_vec_ops.cuh", "spmm_rs_light.cu", "spmm_rs_light_t.cu", "spmm_rs_heavy.cu", "spmm_rs_heavy_t.cu"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(RsTemplates, F32VariantsCompileForSm80AndSm90) { compile_all(DType::F32); }

TEST(RsTemplates, F64VariantsCompileForSm80AndSm90) { compile_all(DType::F64); }

TEST(RsTemplates, CsrVectorUsesTheLightKernelInBothDirections) {
  const Csr<double> a = generate::uniform(64, 64, 4, 2);
  Options o;
  o.variant = "csr_vector";
  for (bool transpose : {false, true}) {
    const Decision d = plan::plan_spmm(inspect(a.pattern()), {33, DType::F32, transpose, 33, 33}, {}, o);
    const auto specs = kernel_specs(d, DType::F32, transpose);
    ASSERT_EQ(specs.size(), 1u);
    EXPECT_EQ(specs[0].template_name, transpose ? "spmm_rs_light_t.cu" : "spmm_rs_light.cu");
    EXPECT_EQ(specs[0].params.at("vec_width"), 1);  // 33 is odd: scalar loads
    expect_compiles(specs[0], std::string("csr_vector") + (transpose ? " Aᵀ·B" : " A·B"));
  }
}

TEST(RsTemplates, RenderedSourceCarriesThePlannedShape) {
  const Decision d = forced_rs(DType::F32, 128, false, 4, {16, 2, 4});
  const auto specs = kernel_specs(d, DType::F32, false);
  const std::string light = jit::render(specs[0]);
  EXPECT_NE(light.find("constexpr int kLanes = 16;"), std::string::npos);
  EXPECT_NE(light.find("constexpr int kCf = 2;"), std::string::npos);
  EXPECT_NE(light.find("sj_walk_row<kLanes, kUnroll, kCf, float4>"), std::string::npos);  // loads float4 vectors
  const std::string heavy = jit::render(specs[1]);
  EXPECT_NE(heavy.find("__launch_bounds__(" + std::to_string(d.params.at("heavy_threads").get<int>()) + ", " +
                       std::to_string(d.params.at("blocks_per_sm").get<int>()) + ")"),
            std::string::npos);
  // The heavy kernel stages panel_width rows of a 16 x 4 x 2-float slice: the check admits the
  // widest panel whose rows fit the device's shared memory per block, and no wider.
  const variants::SpmmVariant& rs = *variants::SpmmRegistry::find("rs");
  plan::DeviceTarget device;
  nlohmann::json params = d.params;
  params["panel_width"] = int(device.shared_per_block_optin / (16 * 4 * 2 * 4));
  EXPECT_NO_THROW(rs.check({128, DType::F32, false}, device, params));
  params["panel_width"] = params["panel_width"].get<int>() + 1;
  EXPECT_THROW(rs.check({128, DType::F32, false}, device, params), InvalidInputError);
}

// ---------------------------------------------------------------------------------------
// csr_merge

struct MergeShape {
  int lanes, cf, unroll, nnz_per_group;
};

Decision forced_merge(DType dtype, int32_t k, bool transpose, int vec_width, const MergeShape& s) {
  const Csr<double> a = generate::rmat(1024, 8000, 1);
  Options o;
  o.variant = "csr_merge";
  o.params = {{"vec_width", vec_width}, {"lanes", s.lanes}, {"cf", s.cf}, {"unroll", s.unroll}, {"nnz_per_group", s.nnz_per_group}};
  return plan::plan_spmm(inspect(a.pattern()), {k, dtype, transpose, k, k}, {}, o);
}

void compile_merge(DType dtype) {
  const int vector = dtype == DType::F64 ? 2 : 4;
  for (bool transpose : {false, true}) {
    for (int vec_width : {vector, 1}) {
      for (const MergeShape& s : {MergeShape{8, 1, 8, 32}, MergeShape{16, 2, 4, 64}, MergeShape{32, 4, 1, 256}, MergeShape{32, 1, 2, 5}}) {
        const Decision d = forced_merge(dtype, 128, transpose, vec_width, s);
        const auto specs = kernel_specs(d, dtype, transpose);
        // A·B clears the rows it does not store whole first; Aᵀ·B clears all of C with a memset.
        ASSERT_EQ(specs.size(), transpose ? 1u : 2u);
        EXPECT_EQ(specs[0].template_name, transpose ? "spmm_csr_merge_t.cu" : "spmm_csr_merge.cu");
        if (!transpose) {
          EXPECT_EQ(specs[1].template_name, "spmm_clear_rows.cu");
          expect_compiles(specs[1], std::string(to_string(dtype)) + " csr_merge clear rows vec=" + std::to_string(vec_width));
          // Groups narrower than a warp shuffle the rows with the loads; a warp's after them.
          const std::string mode = std::string("kRowsWithLoads = ") + (s.lanes < 32 ? "1;" : "0;");
          EXPECT_NE(jit::render(specs[0]).find(mode), std::string::npos) << "lanes=" << s.lanes;
        }
        expect_compiles(specs[0], std::string(to_string(dtype)) + (transpose ? " Aᵀ·B" : " A·B") + " csr_merge vec=" +
                                      std::to_string(vec_width) + " lanes=" + std::to_string(s.lanes) + " cf=" + std::to_string(s.cf) +
                                      " unroll=" + std::to_string(s.unroll) + " range=" + std::to_string(s.nnz_per_group));
      }
    }
  }
}

TEST(MergeTemplates, BothTemplatesAreKnown) {
  const auto names = jit::template_names();
  for (const char* expected : {"spmm_csr_merge.cu", "spmm_csr_merge_t.cu", "spmm_clear_rows.cu"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(MergeTemplates, F32VariantsCompileForSm80AndSm90) { compile_merge(DType::F32); }

TEST(MergeTemplates, F64VariantsCompileForSm80AndSm90) { compile_merge(DType::F64); }

TEST(MergeTemplates, RenderedSourceCarriesThePlannedShapeAndSlice) {
  const Decision d = forced_merge(DType::F32, 512, false, 4, {16, 2, 4, 64});
  const jit::KernelSpec spec = kernel_specs(d, DType::F32, false).at(0);
  const std::string source = jit::render(spec);
  for (const char* line : {"constexpr int kLanes = 16;", "constexpr int kCf = 2;", "constexpr int kUnroll = 4;",
                           "constexpr int kNnzPerGroup = 64;", "sj_load_vec<float4>", "__launch_bounds__(128)"})
    EXPECT_NE(source.find(line), std::string::npos) << line;
}

// ---------------------------------------------------------------------------------------
// csr_rowsplit

struct RowsplitShape {
  int lanes, cf, unroll, parts, rows = 1;
};

Decision forced_rowsplit(DType dtype, int32_t k, int vec_width, const RowsplitShape& s) {
  const Csr<double> a = generate::uniform(64, 576, 200, 1);
  Options o;
  o.variant = "csr_rowsplit";
  o.params = {{"vec_width", vec_width}, {"lanes", s.lanes}, {"cf", s.cf}, {"unroll", s.unroll}, {"parts", s.parts}, {"rows", s.rows}};
  return plan::plan_spmm(inspect(a.pattern()), {k, dtype, false, k, k}, {}, o);
}

void compile_rowsplit(DType dtype) {
  const int vector = dtype == DType::F64 ? 2 : 4;
  for (int vec_width : {vector, 1}) {
    for (const RowsplitShape& s : {RowsplitShape{8, 1, 4, 2}, RowsplitShape{16, 2, 8, 4}, RowsplitShape{32, 4, 1, 16}, RowsplitShape{32, 1, 2, 8},
                                   RowsplitShape{16, 1, 8, 4, 16}, RowsplitShape{32, 2, 2, 8, 2}}) {
      const Decision d = forced_rowsplit(dtype, 128, vec_width, s);
      const auto specs = kernel_specs(d, dtype, false);
      ASSERT_EQ(specs.size(), 1u);
      EXPECT_EQ(specs[0].template_name, "spmm_csr_rowsplit.cu");
      expect_compiles(specs[0], std::string(to_string(dtype)) + " csr_rowsplit vec=" + std::to_string(vec_width) + " lanes=" +
                                    std::to_string(s.lanes) + " cf=" + std::to_string(s.cf) + " unroll=" + std::to_string(s.unroll) +
                                    " parts=" + std::to_string(s.parts) + " rows=" + std::to_string(s.rows));
    }
  }
}

TEST(RowsplitTemplates, F32VariantsCompileForSm80AndSm90) { compile_rowsplit(DType::F32); }

TEST(RowsplitTemplates, F64VariantsCompileForSm80AndSm90) { compile_rowsplit(DType::F64); }

TEST(RowsplitTemplates, RenderedSourceCarriesThePlannedShapeAndSlice) {
  const Decision d = forced_rowsplit(DType::F32, 512, 4, {16, 2, 4, 8});
  const std::string source = jit::render(kernel_specs(d, DType::F32, false).at(0));
  for (const char* line : {"constexpr int kLanes = 16;", "constexpr int kCf = 2;", "constexpr int kUnroll = 4;",
                           "constexpr int kParts = 8;", "sj_walk_row<kLanes, kUnroll, kCf, float4>", "__launch_bounds__(16 * 8 * 1)"})
    EXPECT_NE(source.find(line), std::string::npos) << line;
}

TEST(RowsplitTemplates, RowTileSourceHasItsRowsAndBlockSize) {
  const Decision d = forced_rowsplit(DType::F32, 512, 4, {16, 1, 8, 4, 16});
  const std::string source = jit::render(kernel_specs(d, DType::F32, false).at(0));
  for (const char* line : {"constexpr int kRows = 16;", "__launch_bounds__(16 * 4 * 16)", "partial[kRows * kParts][kLanes * kCf]"})
    EXPECT_NE(source.find(line), std::string::npos) << line;
}

// Parameters recorded before row tiles existed (a tuning record of an earlier build) have no
// `rows`: they are a row a block.
TEST(RowsplitTemplates, ParametersWithoutRowsAreARowABlock) {
  Decision d = forced_rowsplit(DType::F32, 512, 4, {16, 2, 4, 8});
  d.params.erase("rows");
  const std::string source = jit::render(kernel_specs(d, DType::F32, false).at(0));
  EXPECT_NE(source.find("constexpr int kRows = 1;"), std::string::npos);
  EXPECT_NE(source.find("__launch_bounds__(16 * 8 * 1)"), std::string::npos);
}

TEST(RowsplitTemplates, FewerPartsThanVectorsPerLaneOrTransposeAreRejected) {
  EXPECT_THROW(forced_rowsplit(DType::F32, 128, 4, {8, 4, 4, 2}), InvalidInputError);
  EXPECT_THROW(forced_rowsplit(DType::F32, 128, 4, {8, 1, 4, 2, 3}), InvalidInputError);      // rows 3
  EXPECT_THROW(forced_rowsplit(DType::F32, 128, 4, {32, 1, 4, 8, 8}), InvalidInputError);     // 2048 threads
  EXPECT_THROW(forced_rowsplit(DType::F32, 128, 4, {32, 4, 2, 16, 2}), InvalidInputError);    // 64 KB of partial sums
  const Csr<double> a = generate::uniform(64, 576, 200, 1);
  Options o;
  o.variant = "csr_rowsplit";
  EXPECT_THROW(plan::plan_spmm(inspect(a.pattern()), {128, DType::F32, true, 128, 128}, {}, o), UnsupportedError);
}

// ---------------------------------------------------------------------------------------
// csr_pipelined

struct PipelinedShape {
  int lanes, pairs, unroll, threads = 256;
};

Decision forced_pipelined(DType dtype, int32_t k, int vec_width, const PipelinedShape& s, bool transpose = false) {
  const Csr<double> a = generate::uniform(256, 2304, 230, 1);
  Options o;
  o.variant = "csr_pipelined";
  o.params = {{"vec_width", vec_width}, {"lanes_per_row", s.lanes}, {"pairs_per_lane", s.pairs}, {"unroll", s.unroll},
              {"block_threads", s.threads}};
  o.transpose_a = transpose;
  return plan::plan_spmm(inspect(a.pattern()), {k, dtype, transpose, k, k}, {}, o);
}

void compile_pipelined(DType dtype) {
  const int vector = dtype == DType::F64 ? 2 : 4;
  for (int vec_width : {vector, 1}) {
    for (const PipelinedShape& s : {PipelinedShape{32, 1, 16}, PipelinedShape{16, 4, 32}, PipelinedShape{32, 2, 32},
                                    PipelinedShape{8, 4, 16}, PipelinedShape{8, 1, 1, 64}}) {
      const Decision d = forced_pipelined(dtype, 128, vec_width, s);
      const auto specs = kernel_specs(d, dtype, false);
      ASSERT_EQ(specs.size(), 1u);
      EXPECT_EQ(specs[0].template_name, "spmm_csr_pipelined.cu");
      expect_compiles(specs[0], std::string(to_string(dtype)) + " csr_pipelined vec=" + std::to_string(vec_width) + " lanes=" +
                                    std::to_string(s.lanes) + " pairs=" + std::to_string(s.pairs) + " unroll=" +
                                    std::to_string(s.unroll) + " threads=" + std::to_string(s.threads));
    }
  }
}

TEST(PipelinedTemplates, F32VariantsCompileForSm80AndSm90) { compile_pipelined(DType::F32); }

TEST(PipelinedTemplates, F64VariantsCompileForSm80AndSm90) { compile_pipelined(DType::F64); }

TEST(PipelinedTemplates, RenderedSourceCarriesThePlannedShape) {
  const Decision d = forced_pipelined(DType::F32, 512, 4, {16, 4, 32, 128});
  const std::string source = jit::render(kernel_specs(d, DType::F32, false).at(0));
  for (const char* line : {"constexpr int kLanes = 16;", "constexpr int kPairs = 4;", "constexpr int kUnroll = 32;",
                           "constexpr int kVec = 4;", "sj_load_vec<float4>", "__launch_bounds__(128)"})
    EXPECT_NE(source.find(line), std::string::npos) << line;
}

TEST(PipelinedTemplates, BadShapesAndTransposeAreRejected) {
  EXPECT_THROW(forced_pipelined(DType::F32, 128, 4, {8, 1, 16}), InvalidInputError);        // unroll past the chunk
  EXPECT_THROW(forced_pipelined(DType::F32, 128, 4, {16, 2, 12}), InvalidInputError);       // unroll 12
  EXPECT_THROW(forced_pipelined(DType::F32, 128, 4, {16, 8, 32}), InvalidInputError);       // 8 pairs a lane
  EXPECT_THROW(forced_pipelined(DType::F32, 128, 4, {32, 1, 16, 512}), InvalidInputError);  // spills at 512 threads
  EXPECT_THROW(forced_pipelined(DType::F32, 126, 4, {32, 1, 16}), InvalidInputError);       // vectors past K
  EXPECT_THROW(forced_pipelined(DType::F32, 128, 4, {32, 1, 16}, true), UnsupportedError);
}

}  // namespace
}  // namespace sparsejit
