// The SpAMM kernel templates (spamm_norms, spamm_search, spamm_simt, spamm_mma, spamm_wgmma and
// their partials spamm_stage and spamm_lists): every kernel the planner can ask for (each tile,
// value type, precision and copy width, at the variants' default parameters) rendered and
// compiled with NVRTC for sm_80 and sm_90 (wgmma's for sm_90a alone), no GPU needed; and the
// rendered sources carry the shapes asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "plan/spamm.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit {
namespace {

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

plan::SpammProblem problem(DType dtype, SpammPrecision precision, int32_t tile, bool aligned) {
  plan::SpammProblem p;
  p.dtype = dtype;
  p.precision = precision;
  p.m = 1000;
  p.k = aligned ? 1024 : 1021;
  p.n = 1000;
  p.lda = p.k;
  p.ldb = p.ldc = p.n;
  p.tile = tile;
  return p;
}

// The planned kernels of a forced variant on a problem with 10% of its products kept.
std::vector<jit::KernelSpec> planned_specs(const std::string& variant, const plan::SpammProblem& p,
                                           const nlohmann::json& params = nlohmann::json::object()) {
  plan::SpammFeatures f;
  f.selection.triples = int64_t(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  f.selection.valid = f.selection.triples / 10;
  f.selection.ratio = 0.1;
  SpammOptions o;
  o.variant = variant;
  o.params = params;
  const Decision d = plan::plan_spamm(f, p, {}, o);
  return variants::SpammRegistry::find(variant)->kernel_specs(d, p);
}

// Every multiplication kernel the planner can produce.
std::vector<jit::KernelSpec> every_multiplication_kernel() {
  std::vector<jit::KernelSpec> specs;
  for (int32_t tile : plan::kSpammTiles)
    for (bool aligned : {true, false}) {
      for (DType dtype : {DType::F32, DType::F64})
        for (const jit::KernelSpec& s : planned_specs("simt", problem(dtype, SpammPrecision::Full, tile, aligned))) specs.push_back(s);
      for (SpammPrecision precision : {SpammPrecision::Full, SpammPrecision::TF32, SpammPrecision::FP16, SpammPrecision::BF16}) {
        for (const jit::KernelSpec& s : planned_specs("mma", problem(DType::F32, precision, tile, aligned))) specs.push_back(s);
        // Tile 64 groups 2 x 2 C tiles by default; one per block when forced.
        if (tile == 64)
          for (const jit::KernelSpec& s : planned_specs("mma", problem(DType::F32, precision, tile, aligned), {{"group", 1}}))
            specs.push_back(s);
        if (tile == 64 && (precision == SpammPrecision::FP16 || precision == SpammPrecision::BF16))
          for (const jit::KernelSpec& s : planned_specs("wgmma", problem(DType::F32, precision, tile, aligned))) specs.push_back(s);
      }
    }
  return specs;
}

// The norm and selection kernels every call can run (variants::norms_spec, as ops/spamm.cpp
// asks for them): each tile, stored type and precision, with and without the 16-bit copies
// where the executor may write them, one element or 16 bytes per load.
std::vector<jit::KernelSpec> every_front_kernel() {
  std::vector<jit::KernelSpec> specs{variants::search_spec(), variants::row_counts_spec()};
  struct Form {
    DType stored;
    SpammPrecision precision;
    bool copies;
  };
  const Form forms[] = {{DType::F32, SpammPrecision::Full, false},  {DType::F64, SpammPrecision::Full, false},
                        {DType::F32, SpammPrecision::TF32, false},  {DType::F32, SpammPrecision::FP16, true},
                        {DType::F32, SpammPrecision::BF16, true},   {DType::F16, SpammPrecision::FP16, false},
                        {DType::F16, SpammPrecision::FP16, true},   {DType::BF16, SpammPrecision::BF16, false},
                        {DType::BF16, SpammPrecision::BF16, true}};
  for (int32_t tile : plan::kSpammTiles)
    for (const Form& f : forms)
      for (int vec : {1, int(16 / size_of(f.stored))}) specs.push_back(variants::norms_spec(f.stored, f.precision, tile, f.copies, vec));
  return specs;
}

// Compiles on two threads (the specs are independent); returns one failure line per problem.
std::vector<std::string> compile_all(const std::vector<jit::KernelSpec>& specs) {
  const auto compile_range = [&](std::size_t first, std::size_t step) {
    std::vector<std::string> failures;
    for (std::size_t i = first; i < specs.size(); i += step) {
      const jit::KernelSpec& spec = specs[i];
      const std::string source = jit::render(spec);
      if (source.find("{{") != std::string::npos) failures.push_back(spec.kernel_name + ": unrendered tag");
      // An sm_90a kernel (wgmma) is built for sm_90 alone.
      for (int sm : spec.arch_specific ? std::vector<int>{90} : std::vector<int>{80, 90}) {
        try {
          const jit::CompileResult r =
              jit::compile_to_cubin(source, spec.template_name, sm, jit::normalize_options({}), spec.arch_specific);
          if (!is_elf(r.cubin)) failures.push_back(spec.kernel_name + " sm_" + std::to_string(sm) + ": no ELF");
        } catch (const Error& e) {
          failures.push_back(spec.kernel_name + " sm_" + std::to_string(sm) + ": " + e.what());
        }
      }
    }
    return failures;
  };
  auto second = std::async(std::launch::async, compile_range, 1, 2);
  std::vector<std::string> failures = compile_range(0, 2);
  for (std::string& f : second.get()) failures.push_back(std::move(f));
  return failures;
}

TEST(SpammTemplates, AllTemplatesAreKnown) {
  const auto names = jit::template_names();
  for (const char* expected : {"spamm_norms.cu", "spamm_search.cu", "spamm_row_counts.cu", "spamm_simt.cu", "spamm_mma.cu", "spamm_wgmma.cu",
                               "spamm_stage.cuh", "spamm_lists.cuh"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST(SpammTemplates, ThePlannerAsksForDistinctKernelsOfEveryShape) {
  const auto specs = every_multiplication_kernel();
  std::set<std::string> names;
  for (const auto& s : specs) names.insert(s.kernel_name);
  // 3 tiles x (2 widths x (simt f32, f64; mma full, tf32) + (mma fp16, bf16) at width 8 only),
  // tile 64's mma again with one C tile per block (2 widths x (full, tf32) + fp16, bf16), and
  // tile 64's wgmma for fp16 and bf16.
  EXPECT_EQ(names.size(), 3u * (2 * 4 + 2) + (2 * 2 + 2) + 2);
}

TEST(SpammTemplates, EveryKernelCompilesForSm80AndSm90) {
  std::vector<jit::KernelSpec> specs = every_multiplication_kernel();
  for (jit::KernelSpec& s : every_front_kernel()) specs.push_back(std::move(s));
  const std::vector<std::string> failures = compile_all(specs);
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

TEST(SpammTemplates, NormPassesAreDistinctAndReadTheirStoredType) {
  std::set<std::string> names;
  for (const jit::KernelSpec& s : every_front_kernel()) names.insert(s.kernel_name);
  // The search and row-count kernels and 3 tiles x 2 widths x 8 passes: tf32's is full f32's (it writes no copy).
  EXPECT_EQ(names.size(), 2u + 3u * 8u * 2u);
  const std::string half_copy = jit::render(variants::norms_spec(DType::F16, SpammPrecision::FP16, 64, true, 8));
  for (const char* line : {"typedef __half value_t;", "typedef __half copy_t;", "constexpr int kVec = 8;", "__half2float(in.v[i])"})
    EXPECT_NE(half_copy.find(line), std::string::npos) << line;
  EXPECT_EQ(half_copy.find("__float2half_rn"), std::string::npos);  // a 16-bit copy of 16-bit values converts nothing
  const std::string f32_copy = jit::render(variants::norms_spec(DType::F32, SpammPrecision::BF16, 32, true, 4));
  for (const char* line : {"typedef float value_t;", "typedef __nv_bfloat16 copy_t;", "__float2bfloat16_rn(", "constexpr int kVec = 4;"})
    EXPECT_NE(f32_copy.find(line), std::string::npos) << line;
}

TEST(SpammTemplates, RenderedSourcesCarryTheShapes) {
  const auto mma = planned_specs("mma", problem(DType::F32, SpammPrecision::BF16, 128, true));
  ASSERT_EQ(mma.size(), 1u);
  const std::string source = jit::render(mma[0]);
  for (const char* line : {"typedef __nv_bfloat16 elem_t;", "constexpr int kThreads = 256;", "constexpr int kWarpRows = 64;",
                           "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "constexpr int kVec = 8;", "list_kept(",
                           "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"})
    EXPECT_NE(source.find(line), std::string::npos) << line;
  EXPECT_EQ(source.find("cvt.rna.tf32"), std::string::npos);  // one precision's code only
  const auto split = planned_specs("mma", problem(DType::F32, SpammPrecision::Full, 64, false));
  const std::string split_source = jit::render(split[0]);
  EXPECT_NE(split_source.find("0xffffe000u"), std::string::npos);
  // Tile 64: 2 x 2 C tiles per block, 8 warps of 64 x 32 (each inside one tile).
  for (const char* line : {"constexpr int kGroup = 2;", "constexpr int kThreads = 256;", "constexpr int kWarpRows = 64;"})
    EXPECT_NE(split_source.find(line), std::string::npos) << line;
  EXPECT_NE(split_source.find("constexpr int kVec = 1;"), std::string::npos);  // k = 1021: one float per copy
  const auto simt = planned_specs("simt", problem(DType::F64, SpammPrecision::Full, 32, true));
  const std::string simt_source = jit::render(simt[0]);
  for (const char* line : {"typedef double elem_t;", "constexpr int kTile = 32;", "constexpr int kSlice = 16;", "constexpr int kVec = 2;"})
    EXPECT_NE(simt_source.find(line), std::string::npos) << line;
}

}  // namespace
}  // namespace sparsejit
