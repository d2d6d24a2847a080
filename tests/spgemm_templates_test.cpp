// The SpGEMM row_hash kernel templates (spgemm_hash_bin, spgemm_hash_rows, spgemm_dense_rows):
// every kernel a
// decision can list, rendered from a forced plan whose rows fill every bin, compiled with
// NVRTC for sm_80 and sm_90 (no GPU needed), f32 and f64; and the rendered source carries the
// bins' shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "ops/spgemm_reuse.hpp"
#include "ops/spgemm_reuse_entries.hpp"
#include "ops/spgemm_reuse_rows.hpp"
#include "ops/spgemm_reuse_warps.hpp"
#include "plan/planner.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "variants/spgemm/bitmap_passes.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit {
namespace {

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

bool contains(const std::vector<char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

// A 100000² pair with one row in every bin (16, 64, 256, 1024 and 4096 products) and one of
// 100000 products past them (global-memory tables); the widest row spans all 100000 columns,
// wider than any dense span, so the long rows may go dense or stay hashed.
SpgemmFeatures every_bin() {
  SpgemmFeatures f;
  f.a.rows = f.a.cols = f.b.rows = f.b.cols = 100000;
  for (int64_t p : {16, 64, 256, 1024, 4096, 100000}) {
    int bucket = 1;
    while ((int64_t(1) << (bucket - 1)) < p) ++bucket;
    ++f.rows_by_products[std::size_t(bucket)];
    f.products_by_bucket[std::size_t(bucket)] += p;
    f.products += p;
    ++f.product_rows;
  }
  f.rows_by_products[0] = f.a.rows - f.product_rows;
  f.max_row_products = 100000;
  f.max_row_span = 100000;
  f.a_sorted = f.b_sorted = true;
  return f;
}

std::vector<jit::KernelSpec> row_hash_specs(DType dtype, int max_shared_row = 4096, int dense_span = 4096,
                                            int64_t max_row_span = 100000) {
  SpgemmFeatures f = every_bin();
  f.max_row_span = max_row_span;
  const plan::SpgemmProblem problem{dtype, 100000, 100000, 100000};
  Options o;
  o.variant = "row_hash";
  o.params = {{"max_shared_row", max_shared_row}, {"dense_span", dense_span}};
  const Decision d = plan::plan_spgemm(f, problem, {}, o);
  return variants::SpgemmRegistry::find("row_hash")->kernel_specs(d, problem);
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

TEST(SpgemmTemplates, EveryTemplateIsKnown) {
  const auto names = jit::template_names();
  for (const char* expected :
       {"spgemm_hash_bin.cu", "spgemm_hash_rows.cu", "spgemm_dense_rows.cu", "spgemm_positions.cu", "spgemm_warp_positions.cu",
        "spgemm_row_sums.cu"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(SpgemmTemplates, ADecisionWithRowsInEveryBinListsEveryKernel) {
  const auto specs = row_hash_specs(DType::F32);
  std::set<std::string> names;
  for (const auto& s : specs) names.insert(s.kernel_name);
  EXPECT_EQ(specs.size(), 16u);  // 2 binning kernels, 6 hash bins and the dense bin x 2 passes
  for (const char* name : {"sj_spgemm_hash_bin_symbolic", "sj_spgemm_hash_bin_numeric", "sj_spgemm_hash_symbolic_16",
                           "sj_spgemm_hash_numeric_4096", "sj_spgemm_hash_symbolic_global", "sj_spgemm_hash_numeric_global",
                           "sj_spgemm_dense_symbolic_4096", "sj_spgemm_dense_numeric_4096"})
    EXPECT_TRUE(names.count(name)) << name;
  // A smaller largest shared bin sends the longer rows to the global bin.
  EXPECT_EQ(row_hash_specs(DType::F32, 64).size(), 2u + 3 * 2 + 2);
  // Dense off: the hash bins only.
  EXPECT_EQ(row_hash_specs(DType::F32, 4096, 0).size(), 2u + 6 * 2);
  // Every row within the dense span: the long rows (past 256 columns) all go dense, so the hash
  // bins past 256 and the global one launch nothing.
  EXPECT_EQ(row_hash_specs(DType::F32, 4096, 4096, 3000).size(), 2u + 3 * 2 + 2);
  // ... but with the largest shared bin at 64, rows of 65 to 256 columns stay in the global bin.
  EXPECT_EQ(row_hash_specs(DType::F32, 64, 4096, 3000).size(), 2u + 3 * 2 + 2);
}

TEST(SpgemmTemplates, TheDenseSpanDefaultsToTheWidestRowWithinSharedMemory) {
  SpgemmFeatures f = every_bin();
  const plan::SpgemmProblem problem{DType::F32, 100000, 100000, 100000};
  Options o;
  o.variant = "row_hash";
  f.max_row_span = 3000;  // the next multiple of 1024
  EXPECT_EQ(plan::plan_spgemm(f, problem, {}, o).params.at("dense_span"), 3072);
  f.max_row_span = 200;  // the next power of two below 1024
  EXPECT_EQ(plan::plan_spgemm(f, problem, {}, o).params.at("dense_span"), 256);
  // 227 KiB sums 53248 f32 columns at once (4.125 bytes a column, value and bit, next to 1024
  // threads' staging): a span that fits sums in one window.
  f.max_row_span = 50000;
  Decision d = plan::plan_spgemm(f, problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 50176);
  EXPECT_EQ(d.params.at("dense_window"), 50176);
  // Wider: windows of what fits beside the span's bitmap, up to 8. 100000 columns in f32: 2
  // windows of 51200; 60000 in f64 (8 bytes a value): 3 windows of 25600, priced for the 2 extra
  // passes; 100000 in f64: 5 windows of 24576; 300000 in f64 would take 12: one window of the widest that
  // fits, 25600, as without windows (the rows past it stay hashed).
  f.max_row_span = 100000;
  d = plan::plan_spgemm(f, problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 100352);
  EXPECT_EQ(d.params.at("dense_window"), 51200);
  const plan::SpgemmProblem f64_problem{DType::F64, 100000, 100000, 100000};
  f.max_row_span = 60000;
  d = plan::plan_spgemm(f, f64_problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 60416);
  EXPECT_EQ(d.params.at("dense_window"), 25600);
  const auto row_hash = std::find_if(d.candidates.begin(), d.candidates.end(), [](const Candidate& c) { return c.variant == "row_hash"; });
  ASSERT_NE(row_hash, d.candidates.end());
  EXPECT_GT(row_hash->terms.at("dense_window_products").get<double>(), 0.0) << "2 windows past the first";
  f.max_row_span = 100000;
  d = plan::plan_spgemm(f, f64_problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 100352);
  EXPECT_EQ(d.params.at("dense_window"), 24576);  // the wider span's bitmap takes a granule
  f.max_row_span = 300000;  // 14 windows
  d = plan::plan_spgemm(f, f64_problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 300032);
  EXPECT_EQ(d.params.at("dense_window"), 21504);
  f.max_row_span = 400000;  // past 16 windows: one window's span, the wider rows hashed
  d = plan::plan_spgemm(f, f64_problem, {}, o);
  EXPECT_EQ(d.params.at("dense_span"), 25600);
  EXPECT_EQ(d.params.at("dense_window"), 25600);
  f.b_sorted = false;  // the span is read from B's row ends
  EXPECT_EQ(plan::plan_spgemm(f, problem, {}, o).params.at("dense_span"), 0);
}

// A window that is not a multiple of 32, or so narrow that the span takes more than 16 windows,
// or wider than fits beside the span's bitmap, is refused naming it; 0 means the whole span.
TEST(SpgemmTemplates, ADenseWindowOutsideItsRangeIsRefusedNamingIt) {
  const SpgemmFeatures f = every_bin();
  const plan::SpgemmProblem problem{DType::F64, 100000, 100000, 100000};
  for (const auto& [span, window] : {std::pair<int, int>{8192, 100}, {8192, 256}, {60416, 30720}}) {
    Options o;
    o.variant = "row_hash";
    o.params = {{"dense_span", span}, {"dense_window", window}};
    try {
      plan::plan_spgemm(f, problem, {}, o);
      ADD_FAILURE() << span << "/" << window << " accepted";
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find("dense_window = " + std::to_string(window)), std::string::npos) << e.what();
    }
  }
  Options whole;
  whole.variant = "row_hash";
  whole.params = {{"dense_span", 8192}, {"dense_window", 0}};
  EXPECT_EQ(plan::plan_spgemm(f, problem, {}, whole).params.at("dense_window"), 0);
}

TEST(SpgemmTemplates, ADenseSpanOutsideItsRangeIsRefusedNamingIt) {
  const SpgemmFeatures f = every_bin();
  const plan::SpgemmProblem problem{DType::F64, 100000, 100000, 100000};
  for (int span : {16, 3000, 300032}) {
    Options o;
    o.variant = "row_hash";
    o.params = {{"dense_span", span}};
    try {
      plan::plan_spgemm(f, problem, {}, o);
      ADD_FAILURE() << span << " accepted";
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find("dense_span = " + std::to_string(span)), std::string::npos) << e.what();
    }
  }
}

void compile_every_kernel(DType dtype) {
  for (const jit::KernelSpec& spec : row_hash_specs(dtype))
    expect_compiles(spec, std::string(to_string(dtype)) + " " + spec.kernel_name);
}

TEST(SpgemmTemplates, F32KernelsCompileForSm80AndSm90) { compile_every_kernel(DType::F32); }

TEST(SpgemmTemplates, F64KernelsCompileForSm80AndSm90) { compile_every_kernel(DType::F64); }

TEST(SpgemmTemplates, RenderedSourceCarriesTheBinShapes) {
  for (const jit::KernelSpec& spec : row_hash_specs(DType::F64)) {
    const std::string source = jit::render(spec);
    if (spec.kernel_name == "sj_spgemm_hash_bin_symbolic") {
      EXPECT_NE(source.find("constexpr int kLimits[kSharedBins] = { 16, 64, 256, 1024, 4096 };"), std::string::npos) << source;
      EXPECT_NE(source.find("row_products[row] = products;"), std::string::npos);
    } else if (spec.kernel_name == "sj_spgemm_hash_numeric_16") {
      // 8 threads per row, 32 rows per block, 32-slot tables in shared memory, f64 sums.
      for (const char* line : {"constexpr int kGroup = 8;", "constexpr int kBlock = 256;", "constexpr int kSlots = 32;",
                               "typedef double acc_t;", "__syncwarp(mask);", "atomicAdd(&vals[slot]"})
        EXPECT_NE(source.find(line), std::string::npos) << line;
    } else if (spec.kernel_name == "sj_spgemm_hash_symbolic_global") {
      EXPECT_NE(source.find("table_keys + blockIdx.x * table_stride"), std::string::npos);
      EXPECT_NE(source.find("__syncthreads();"), std::string::npos);
      EXPECT_EQ(source.find("atomicAdd(&vals[slot]"), std::string::npos);  // keys only
    } else if (spec.kernel_name == "sj_spgemm_dense_numeric_4096") {
      // A block of 512 threads per row, a 4096-column dense f64 accumulator (one window) and its bitmap.
      for (const char* line : {"constexpr int kBlock = 512;", "constexpr int kSpan = 4096;", "constexpr int kValueSlots = 4096;",
                               "constexpr int kWindows = kValueSlots > 0 ? (kSpan + kValueSlots - 1) / kValueSlots : 1;",
                               "atomicAdd(&vals[slot]"})
        EXPECT_NE(source.find(line), std::string::npos) << line;
    }
  }
}

// The numeric phase by positions (ops/spgemm_reuse): its three passes for f32 and f64, 2- and
// 4-byte positions, the narrowest and widest lane groups the plan takes, and the blocks of
// wide rows.
TEST(SpgemmTemplates, PositionKernelsCompileForSm80AndSm90) {
  SpgemmFeatures f;
  f.a.nnz = 1000;
  f.a.rows = 100;
  for (DType dtype : {DType::F32, DType::F64})
    for (int64_t products : {3000, 100000}) {
      f.products = products;
      const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, dtype, {}, {}, {}, PositionsKernel::Blocks);
      for (bool long_positions : {false, true})
        for (bool wide_rows : {false, true})
          for (const char* pass : {"build", "numeric", "zero"}) {
            if (wide_rows && std::string(pass) != "numeric") continue;  // only the numeric pass has wide blocks
            const jit::KernelSpec spec = ops::positions_spec(pass, dtype, long_positions, wide_rows, p);
            expect_compiles(spec, std::string(to_string(dtype)) + " " + spec.kernel_name + " lanes " + std::to_string(p.group_lanes));
            const std::string source = jit::render(spec);
            EXPECT_NE(source.find(std::string("typedef ") + (long_positions ? "unsigned int" : "unsigned short") + " pos_t;"),
                      std::string::npos);
            EXPECT_EQ(source.find("constexpr int kLanes = " + std::to_string(p.group_lanes) + ";") != std::string::npos,
                      std::string(pass) == "build");
            EXPECT_NE(source.find("constexpr int kSharedEntries = " + std::to_string(wide_rows ? p.wide_entries : p.shared_entries) + ";"),
                      std::string::npos);
          }
    }
}

// The numeric phase a warp a task (ops/spgemm_reuse_warps): its two passes for f32 and f64
// at the plan's warps, regions and unroll, and at the widest region; the build's source is the
// same whatever the region.
TEST(SpgemmTemplates, WarpPositionKernelsCompileForSm80AndSm90) {
  SpgemmFeatures f;
  f.a.nnz = 1000000;
  f.a.rows = 100000;
  f.products = 50'000'000;
  for (DType dtype : {DType::F32, DType::F64}) {
    const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, dtype, {}, {}, {});
    ASSERT_EQ(p.kernel, PositionsKernel::Warps);
    for (const char* pass : {"build", "numeric"}) {
      const jit::KernelSpec spec = ops::warp_positions_spec(pass, dtype, p.warp);
      expect_compiles(spec, std::string(to_string(dtype)) + " " + spec.kernel_name);
      const std::string source = jit::render(spec);
      EXPECT_NE(source.find("constexpr int kWarps = " + std::to_string(p.warp.warps) + ";"), std::string::npos);
      const bool numeric = std::string(pass) == "numeric";
      EXPECT_EQ(source.find("constexpr int kRegion = " + std::to_string(p.warp.region_entries) + ";") != std::string::npos, numeric);
      EXPECT_EQ(source.find("constexpr int kUnroll = " + std::to_string(p.warp.unroll) + ";") != std::string::npos, numeric);
    }
    plan::WarpTaskPlan wider = p.warp;
    wider.region_entries = 2048;
    EXPECT_EQ(jit::render(ops::warp_positions_spec("build", dtype, wider)), jit::render(ops::warp_positions_spec("build", dtype, p.warp)));
    expect_compiles(ops::warp_positions_spec("numeric", dtype, wider), std::string(to_string(dtype)) + " numeric, 2048 sums");
  }
}

// The numeric phase by entries (ops/spgemm_reuse_entries): its one kernel for f32 and f64 at
// the plan's warps and products a lane, and at eight and sixteen.
TEST(SpgemmTemplates, EntrySumsKernelCompilesForSm80AndSm90) {
  SpgemmFeatures f;
  f.a.nnz = 10000;
  f.a.rows = 1000;
  f.products = 200'000;
  for (DType dtype : {DType::F32, DType::F64}) {
    const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, dtype, {}, {}, {});
    ASSERT_EQ(p.kernel, PositionsKernel::Entries);
    for (int per_lane : {p.entries.per_lane, 8, 16}) {
      plan::EntrySumsPlan e = p.entries;
      e.per_lane = per_lane;
      const jit::KernelSpec spec = ops::entry_sums_spec(dtype, e);
      expect_compiles(spec, std::string(to_string(dtype)) + " entries, " + std::to_string(per_lane) + " a lane");
      const std::string source = jit::render(spec);
      EXPECT_NE(source.find("constexpr int kWarps = " + std::to_string(e.warps) + ";"), std::string::npos);
      EXPECT_NE(source.find("constexpr int kPerLane = " + std::to_string(per_lane) + ";"), std::string::npos);
    }
  }
}

// bitmap_tc's six passes, for f64 and for f32 at every precision, compile for sm_80 and sm_90;
// the f32 multiply pass splits into three TF32 products only at full precision, and multiplies
// f16 or bf16 operands where those are asked for.
TEST(SpgemmTemplates, BitmapTcKernelsCompileForEveryPrecision) {
  SpgemmFeatures f = every_bin();
  f.a_tiles = f.b_tiles = 1000;
  f.tile_products = 5000;
  for (const auto& [dtype, precision] : {std::pair{DType::F64, "full"}, std::pair{DType::F32, "full"}, std::pair{DType::F32, "tf32"},
                                         std::pair{DType::F32, "fp16"}, std::pair{DType::F32, "bf16"}}) {
    const plan::SpgemmProblem problem{dtype, 100000, 100000, 100000};
    Options o;
    o.variant = "bitmap_tc";
    o.params = {{"precision", precision}};
    const Decision d = plan::plan_spgemm(f, problem, {}, o);
    const auto specs = variants::SpgemmRegistry::find("bitmap_tc")->kernel_specs(d, problem);
    ASSERT_EQ(specs.size(), 6u);
    for (const jit::KernelSpec& spec : specs) {
      expect_compiles(spec, spec.kernel_name);
      const std::string source = jit::render(spec);
      const auto tf32_products = [&] {
        std::size_t count = 0;
        for (std::size_t at = source.find("  mma(c["); at != std::string::npos; at = source.find("  mma(c[", at + 1)) ++count;
        return count;
      };
      if (spec.kernel_name.find("multiply_f32") != std::string::npos) {
        EXPECT_EQ(tf32_products(), std::string(precision) == "full" ? 3u : 1u) << spec.kernel_name;
        const std::string half = std::string(precision) == "fp16" ? ".f16.f16.f32" : std::string(precision) == "bf16" ? ".bf16.bf16.f32" : ".tf32.tf32.f32";
        EXPECT_NE(source.find("m16n8k8.row.col.f32" + half), std::string::npos) << spec.kernel_name;
      }
    }
  }
}

// The numeric phase by rows (ops/spgemm_reuse_rows): every bin's kernel, f32 and f64, each with
// its direct and hashed tables and the group syncs of its size.
TEST(SpgemmTemplates, RowSumsCompileForEveryBin) {
  for (DType dtype : {DType::F32, DType::F64})
    for (const plan::RowSumsBin& bin : plan::plan_row_sums(dtype, plan::DeviceTarget{}).bins) {
      const jit::KernelSpec spec = ops::row_sums_spec(dtype, bin);
      expect_compiles(spec, std::string(to_string(dtype)) + " " + spec.kernel_name);
      EXPECT_NE(jit::render(spec).find(bin.group_threads <= 32 ? "__syncwarp(mask)" : "__syncthreads()"), std::string::npos);
    }
}

// The numeric phase's multiply pass (ops/spgemm_reuse_tiles) writes C's sums and not its
// columns, under a name of its own; the variant's writes both.
TEST(SpgemmTemplates, BitmapMultiplyValuesOnlyLeavesTheColumns) {
  for (DType dtype : {DType::F32, DType::F64}) {
    const jit::KernelSpec both = variants::spgemm::bitmap_pass_spec(variants::spgemm::kMultiply, dtype, "full");
    const jit::KernelSpec values = variants::spgemm::bitmap_pass_spec(variants::spgemm::kMultiply, dtype, "full", true);
    expect_compiles(values, values.kernel_name);
    EXPECT_NE(values.kernel_name, both.kernel_name);
    EXPECT_NE(jit::render(both).find("c_col[at] ="), std::string::npos);
    EXPECT_EQ(jit::render(values).find("c_col[at] ="), std::string::npos);
    EXPECT_NE(jit::render(values).find("c_val[at] ="), std::string::npos);
    // values_only applies to the multiply pass alone.
    EXPECT_EQ(variants::spgemm::bitmap_pass_spec(variants::spgemm::kPack, dtype, "full", true).kernel_name,
              variants::spgemm::bitmap_pass_spec(variants::spgemm::kPack, dtype, "full").kernel_name);
  }
}

}  // namespace
}  // namespace sparsejit
