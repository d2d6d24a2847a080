// Rendering every kernel template variant and compiling it with NVRTC (no GPU needed), the
// strictness of rendering, compile error reporting, option normalization, and the Compiler
// facade's memory/disk/compiled paths.
#include <gtest/gtest.h>

#include "support/test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "jit/compiler.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::jit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test::ScopedEnv;

fs::path fresh_dir(const std::string& tag) { return test::fresh_dir("jit-" + tag); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_elf(const std::vector<char>& bytes) {
  return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

bool contains(const std::vector<char>& bytes, const std::string& needle) {
  return std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) != bytes.end();
}

struct Variant {
  std::string label;
  KernelSpec spec;
};

json half_flags(const std::string& value_t) {
  return {{"fp16", value_t == "__half"}, {"bf16", value_t == "__nv_bfloat16"}};
}

// Every documented variant of spmm_csr_rowwarp.cu: each value/accumulator pair, and the
// register coarsening on and off.
std::vector<Variant> spmm_variants() {
  const std::vector<std::pair<std::string, std::string>> types = {
      {"float", "float"}, {"float", "double"}, {"double", "double"}, {"__half", "float"}, {"__nv_bfloat16", "float"}};
  std::vector<Variant> out;
  for (const auto& [value_t, acc_t] : types) {
    for (int cols_per_lane : {1, 4}) {
      const std::string name = "spmm_" + std::to_string(out.size());
      json params = half_flags(value_t);
      params.update({{"value_t", value_t}, {"acc_t", acc_t}, {"warps_per_block", 4}, {"cols_per_lane", cols_per_lane}});
      out.push_back({value_t + "/" + acc_t + " cols_per_lane=" + std::to_string(cols_per_lane),
                     KernelSpec{"spmm_csr_rowwarp.cu", name, params, {}}});
    }
  }
  return out;
}

// Every documented variant of sddmm_coo_flat.cu: f32/f64, vector loads on/off, a small and a
// full-warp group.
std::vector<Variant> sddmm_variants() {
  std::vector<Variant> out;
  for (const std::string value_t : {"float", "double"}) {
    for (bool vec4 : {false, true}) {
      for (int group : {4, 32}) {
        json params = half_flags(value_t);
        params.update({{"value_t", value_t}, {"acc_t", value_t}, {"group_size", group}, {"nnz_per_group", 4}, {"block_size", 128},
                       {"vec4", vec4}});
        if (vec4) params.update({{"vec_t", value_t == "float" ? "float4" : "double2"}, {"vec_width", value_t == "float" ? 4 : 2}});
        out.push_back({value_t + (vec4 ? " vec4" : " scalar") + " group=" + std::to_string(group),
                       KernelSpec{"sddmm_coo_flat.cu", "sddmm_" + std::to_string(out.size()), params, {}}});
      }
    }
  }
  return out;
}

void expect_compiles(const Variant& v) {
  const std::string source = render(v.spec);
  EXPECT_EQ(source.find("{{"), std::string::npos) << v.label;
  EXPECT_NE(source.find("extern \"C\" __global__"), std::string::npos) << v.label;
  for (int sm : {80, 90}) {
    const CompileResult result = compile_to_cubin(source, v.spec.template_name, sm, normalize_options({}));
    EXPECT_TRUE(is_elf(result.cubin)) << v.label << " sm_" << sm;
    EXPECT_TRUE(contains(result.cubin, v.spec.kernel_name)) << v.label << ": entry point missing from cubin";
    EXPECT_NE(std::find(result.options.begin(), result.options.end(), "--gpu-architecture=sm_" + std::to_string(sm)),
              result.options.end());
  }
}

TEST(Templates, EveryTemplateIsKnown) {
  const auto names = template_names();
  for (const char* expected : {"common_types.cuh", "spmm_csr_rowwarp.cu", "sddmm_coo_flat.cu"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

// The runtime launches every template kernel early (programmatic dependent launch on sm_90+),
// which is safe only if the kernel waits for its predecessor before it touches the operands or
// the output: before sj_wait_for_predecessor() a kernel body may name no pointer parameter but
// the pattern arrays below (S's columns, and formats the runtime built from the pattern on the
// host and uploaded before the call: no kernel writes them).
TEST(Templates, EveryKernelWaitsForItsPredecessorBeforeTouchingOperands) {
  const std::set<std::string> pattern_arrays = {"rows",   "cols",     "chunk_row", "chunk_ptr", "tile_i",
                                                "tile_j", "tile_ptr", "bitmap",    "first",     "ranges"};
  const std::regex signature(R"(\{\{kernel_name\}\}\(([^)]*)\)\s*\{(?!\{))");
  const std::regex pointer_parameter(R"(\*\s*(?:__restrict__\s+)?(\w+)\s*(?:,|$))");
  int kernels = 0;
  for (const std::string& name : template_names()) {
    const std::string text = template_text(name);
    std::smatch kernel;
    if (!std::regex_search(text, kernel, signature)) continue;
    ++kernels;
    EXPECT_NE(text.find("{{>predecessor_wait.cuh}}"), std::string::npos) << name;
    const std::string parameters = kernel[1].str();
    const std::size_t body = std::size_t(kernel.position(0) + kernel.length(0));
    const std::size_t wait = text.find("sj_wait_for_predecessor();", body);
    ASSERT_NE(wait, std::string::npos) << name << ": the kernel never waits for its predecessor";
    const std::string before = std::regex_replace(text.substr(body, wait - body), std::regex("//[^\\n]*"), "");
    int pointers = 0;
    for (std::sregex_iterator p(parameters.begin(), parameters.end(), pointer_parameter), end; p != end; ++p) {
      ++pointers;
      const std::string parameter = (*p)[1].str();
      if (pattern_arrays.count(parameter)) continue;
      EXPECT_FALSE(std::regex_search(before, std::regex("\\b" + parameter + "\\b")))
          << name << ": '" << parameter << "' is named before the wait";
    }
    EXPECT_GE(pointers, 2) << name << ": parameters not parsed: " << parameters;
  }
  EXPECT_GE(kernels, 14);
}

TEST(Templates, SpmmVariantsCompileForSm80AndSm90) {
  for (const auto& v : spmm_variants()) expect_compiles(v);
}

// spmm_dense_mma.cu (the dense variant's tensor-core GEMM): the shape the planner runs and
// others, 16-byte and single-value copies, one to four stages, for sm_80 and sm_90; the TF32
// instruction, the fragment reads and the split parts' atomics are in the source.
TEST(Templates, SpmmDenseMmaCompilesForSm80AndSm90) {
  const auto params = [](int width, int ti, int tj, int wr, int wc, int slice, int stages) {
    return nlohmann::json{{"vec_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"slice", slice},
                          {"stages", stages}, {"warp_rows", wr}, {"warp_cols", wc},
                          {"block_size", 32 * (ti / wr) * (tj / wc)}, {"min_blocks", 2}, {"fp16", false}, {"bf16", false}};
  };
  int n = 0;
  for (int width : {1, 4})
    for (const auto& [ti, tj, wr, wc, slice, stages] : std::vector<std::array<int, 6>>{
             {64, 32, 32, 16, 32, 3}, {64, 64, 32, 32, 16, 4}, {32, 64, 16, 32, 32, 1}, {128, 128, 64, 32, 32, 2}})
      expect_compiles({"dense_mma width=" + std::to_string(width) + " tile=" + std::to_string(ti) + "x" + std::to_string(tj),
                       KernelSpec{"spmm_dense_mma.cu", "spmm_dense_mma_" + std::to_string(n++),
                                  params(width, ti, tj, wr, wc, slice, stages), {}}});
  const std::string source = render({"spmm_dense_mma.cu", "k", params(4, 64, 32, 32, 16, 32, 3), {}});
  EXPECT_NE(source.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  EXPECT_NE(source.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos);
  EXPECT_NE(source.find("atomicAdd(out"), std::string::npos);
}

TEST(Templates, SddmmVariantsCompileForSm80AndSm90) {
  for (const auto& v : sddmm_variants()) expect_compiles(v);
}

TEST(Render, SubstitutesValuesVerbatimAndDrivesSections) {
  KernelSpec spec = sddmm_variants()[0].spec;  // float, scalar
  const std::string scalar = render(spec);
  EXPECT_NE(scalar.find("const float* __restrict__ s"), std::string::npos);
  EXPECT_EQ(scalar.find("reinterpret_cast"), std::string::npos);
  EXPECT_EQ(scalar.find("#include <cuda_fp16.h>"), std::string::npos);
  spec.params.update({{"vec4", true}, {"vec_t", "float4"}, {"vec_width", 4}});
  EXPECT_NE(render(spec).find("reinterpret_cast<const float4*>"), std::string::npos);
  spec.params.update({{"fp16", true}});
  EXPECT_NE(render(spec).find("#include <cuda_fp16.h>"), std::string::npos);
  // A value with characters HTML escaping would change goes in untouched.
  spec.params["acc_t"] = "float /*<&>*/";
  EXPECT_NE(render(spec).find("float /*<&>*/ dot"), std::string::npos);
}

TEST(Render, MissingParamIsAnErrorNamingIt) {
  KernelSpec spec = spmm_variants()[0].spec;
  spec.params.erase("cols_per_lane");
  try {
    render(spec);
    FAIL() << "rendering without cols_per_lane succeeded";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("cols_per_lane"), std::string::npos) << e.what();
  }
  // A missing bool flag is an error too: the planner decides every section.
  spec = spmm_variants()[0].spec;
  spec.params.erase("fp16");
  EXPECT_THROW(render(spec), InvalidInputError);
}

TEST(Render, ValuesInsideSkippedSectionsAreNotRequired) {
  KernelSpec spec = sddmm_variants()[0].spec;
  ASSERT_FALSE(spec.params.at("vec4").get<bool>());
  ASSERT_FALSE(spec.params.contains("vec_t"));
  EXPECT_NO_THROW(render(spec));
  spec.params["vec4"] = true;  // now vec_t and vec_width are reached
  try {
    render(spec);
    FAIL() << "vec4 without vec_t rendered";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("vec_t"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vec_width"), std::string::npos) << e.what();
  }
}

TEST(Render, KernelNameComesFromTheSpecWhenParamsLackIt) {
  KernelSpec spec = spmm_variants()[0].spec;
  spec.kernel_name = "my_entry";
  EXPECT_NE(render(spec).find("my_entry(int m"), std::string::npos);
}

TEST(Render, UnknownTemplateNamesItAndListsKnownOnes) {
  KernelSpec spec{"spmm_nonexistent.cu", "k", json::object(), {}};
  try {
    render(spec);
    FAIL() << "unknown template rendered";
  } catch (const InvalidInputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("spmm_nonexistent.cu"), std::string::npos) << message;
    EXPECT_NE(message.find("spmm_csr_rowwarp.cu"), std::string::npos) << message;
  }
}

TEST(Render, NullParamIsRejected) {
  KernelSpec spec = spmm_variants()[0].spec;
  spec.params["value_t"] = nullptr;
  EXPECT_THROW(render(spec), InvalidInputError);
}

TEST(Render, TemplateDirOverridesEmbeddedTemplatesAndResolvesPartials) {
  const fs::path dir = fresh_dir("tpl");
  std::ofstream(dir / "helper.cuh.mustache") << "#define HELPER_{{tag}} 1\n";
  std::ofstream(dir / "k.cu.mustache") << "{{>helper.cuh}}\nint {{name}};\n";
  ScopedEnv env("SPARSEJIT_TEMPLATE_DIR", dir.c_str());
  EXPECT_EQ(template_names(), (std::vector<std::string>{"helper.cuh", "k.cu"}));
  EXPECT_EQ(render(KernelSpec{"k.cu", "", {{"tag", "X"}, {"name", "y"}}, {}}), "#define HELPER_X 1\n\nint y;\n");  // kainjow keeps the partial line's newline

  std::ofstream(dir / "k.cu.mustache") << "{{>nowhere.cuh}}\n";
  try {
    render(KernelSpec{"k.cu", "", json::object(), {}});
    FAIL() << "missing partial rendered";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere.cuh"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Render, UnclosedSectionIsACompileError) {
  const fs::path dir = fresh_dir("unclosed");
  std::ofstream(dir / "broken.cu.mustache") << "{{#flag}}\nint x;\n";
  ScopedEnv env("SPARSEJIT_TEMPLATE_DIR", dir.c_str());
  try {
    render(KernelSpec{"broken.cu", "", {{"flag", true}}, {}});
    FAIL() << "unclosed section rendered";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("broken.cu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("flag"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A template whose CUDA does not compile: the error carries the log and the offending
// source line, and the source is on disk where the message says.
TEST(Compile, ErrorShowsLogAndSourceLineAndDumpsTheSource) {
  const fs::path templates = fresh_dir("cuda-error");
  const fs::path dumps = templates / "dumps";
  std::ofstream(templates / "bad.cu.mustache")
      << "extern \"C\" __global__ void {{kernel_name}}(float* x) {\n"
         "  x[0] = undefined_symbol_{{kernel_name}};\n"
         "}\n";
  ScopedEnv tpl("SPARSEJIT_TEMPLATE_DIR", templates.c_str());
  ScopedEnv dump("SPARSEJIT_DUMP_SOURCE", dumps.c_str());
  Compiler compiler(std::nullopt);
  try {
    compiler.get_kernel(KernelSpec{"bad.cu", "bad_kernel", json::object(), {}}, 90);
    FAIL() << "a kernel with an undefined identifier compiled";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("undefined_symbol_bad_kernel"), std::string::npos) << message;  // the log
    EXPECT_NE(message.find("line 2:   x[0] = undefined_symbol_bad_kernel;"), std::string::npos) << message;
    EXPECT_NE(e.log().find("error"), std::string::npos);
    EXPECT_NE(e.source().find("undefined_symbol_bad_kernel"), std::string::npos);
    const size_t at = message.find("source written to ");
    ASSERT_NE(at, std::string::npos) << message;
    const fs::path written = message.substr(at + 18);
    EXPECT_EQ(written.parent_path(), dumps);
    EXPECT_EQ(read_text(written), e.source());
  }
  fs::remove_all(templates);
}

TEST(Compile, FailedSourceGoesToTheTempDirWithoutDumpDir) {
  ScopedEnv dump("SPARSEJIT_DUMP_SOURCE", nullptr);
  const std::string source = "extern \"C\" __global__ void k() { int y = ; }\n";
  try {
    compile_to_cubin(source, "syntax_error_test.cu", 80, normalize_options({}));
    FAIL() << "syntax error compiled";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("line 1: extern \"C\" __global__ void k() { int y = ; }"), std::string::npos) << message;
    const size_t at = message.find("source written to ");
    ASSERT_NE(at, std::string::npos) << message;
    const fs::path written = message.substr(at + 18);
    EXPECT_EQ(read_text(written), source);
    fs::remove(written);
  }
}

TEST(Compile, DumpDirReceivesEveryRenderedSource) {
  const fs::path dumps = fresh_dir("dump-all");
  ScopedEnv dump("SPARSEJIT_DUMP_SOURCE", dumps.c_str());
  Compiler compiler(std::nullopt);
  const auto variant = spmm_variants()[0];
  compiler.get_kernel(variant.spec, 80);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dumps)) {
    ++files;
    EXPECT_EQ(read_text(entry.path()), render(variant.spec));
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dumps);
}

TEST(Options, NormalizedSortedDeduplicatedWithFixedOptions) {
  EXPECT_EQ(normalize_options({}), (std::vector<std::string>{"-default-device", "-std=c++17"}));
  EXPECT_EQ(normalize_options({"--use_fast_math", "-lineinfo", "--use_fast_math", "", "-default-device"}),
            (std::vector<std::string>{"--use_fast_math", "-default-device", "-lineinfo", "-std=c++17"}));
  EXPECT_EQ(options_string(normalize_options({"-lineinfo"})), "-default-device -lineinfo -std=c++17");
  EXPECT_THROW(normalize_options({"--gpu-architecture=sm_70"}), InvalidInputError);
  EXPECT_THROW(normalize_options({"-std=c++14"}), InvalidInputError);
  EXPECT_THROW(normalize_options({"-I/tmp"}), InvalidInputError);
  EXPECT_EQ(arch_name(90), "sm_90");
  EXPECT_THROW(arch_name(9), InvalidInputError);
}

TEST(Compile, NvrtcVersionIsMajorDotMinor) {
  const std::string version = nvrtc_version();
  const size_t dot = version.find('.');
  ASSERT_NE(dot, std::string::npos) << version;
  EXPECT_GE(std::stoi(version.substr(0, dot)), 12);
}

TEST(CompilerFacade, CompiledThenMemoryThenDiskInANewCompiler) {
  const fs::path dir = fresh_dir("facade");
  const auto variant = sddmm_variants()[1];
  cache::KernelKey first_key;
  {
    Compiler compiler(dir.string());
    const CompiledKernel first = compiler.get_kernel(variant.spec, 90);
    EXPECT_EQ(first.source, cache::KernelSource::Compiled);
    EXPECT_GT(first.compile_ms, 0);
    EXPECT_TRUE(is_elf(*first.cubin));
    EXPECT_EQ(first.kernel_name, variant.spec.kernel_name);
    EXPECT_EQ(first.key.arch, "sm_90");
    EXPECT_EQ(first.key.template_name, "sddmm_coo_flat.cu");
    EXPECT_EQ(first.key.options, "-default-device -std=c++17");
    EXPECT_EQ(first.key.nvrtc_version, nvrtc_version());
    first_key = first.key;

    const CompiledKernel again = compiler.get_kernel(variant.spec, 90);
    EXPECT_EQ(again.source, cache::KernelSource::Memory);
    EXPECT_EQ(again.compile_ms, 0);
    EXPECT_EQ(*again.cubin, *first.cubin);

    const CompiledKernel other_arch = compiler.get_kernel(variant.spec, 80);
    EXPECT_EQ(other_arch.source, cache::KernelSource::Compiled);
    EXPECT_EQ(other_arch.key.arch, "sm_80");
    EXPECT_EQ(other_arch.key.source_sha256, first.key.source_sha256);

    KernelSpec fast = variant.spec;
    fast.extra_options = {"--use_fast_math"};
    const CompiledKernel fast_math = compiler.get_kernel(fast, 90);
    EXPECT_EQ(fast_math.source, cache::KernelSource::Compiled);
    EXPECT_EQ(fast_math.key.options, "--use_fast_math -default-device -std=c++17");

    // The architecture-specific target is its own binary and key (sm_90a), same source.
    KernelSpec specific = variant.spec;
    specific.arch_specific = true;
    const CompiledKernel arch_specific = compiler.get_kernel(specific, 90);
    EXPECT_EQ(arch_specific.source, cache::KernelSource::Compiled);
    EXPECT_EQ(arch_specific.key.arch, "sm_90a");
    EXPECT_EQ(arch_specific.key.source_sha256, first.key.source_sha256);
    EXPECT_EQ(compiler.key_for(specific, 90).arch, "sm_90a");
  }
  Compiler fresh(dir.string());
  const CompiledKernel from_disk = fresh.get_kernel(variant.spec, 90);
  EXPECT_EQ(from_disk.source, cache::KernelSource::Disk);
  EXPECT_EQ(from_disk.key, first_key);
  EXPECT_EQ(fresh.key_for(variant.spec, 90), first_key);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsejit::jit
