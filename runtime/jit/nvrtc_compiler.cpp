#include "jit/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "jit/source_dump.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::jit {
namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool owned_by_compiler(const std::string& option) {
  return starts_with(option, "-std") || starts_with(option, "--std") || starts_with(option, "-arch") ||
         starts_with(option, "--gpu-architecture") || starts_with(option, "-I") ||
         starts_with(option, "--include-path");
}

void check_nvrtc(nvrtcResult result, const char* what, const std::string& program_name) {
  if (result != NVRTC_SUCCESS) {
    throw CompileError(std::string(what) + " failed for '" + program_name + "': " + nvrtcGetErrorString(result),
                       "", "");
  }
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

// "line N: <text>" for every "(N): error" in the log, in log order, each line once.
std::string referenced_lines(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  static const std::regex error_at(R"(\((\d+)\): (catastrophic )?error)");
  std::set<long> seen;
  std::string out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), error_at); it != std::sregex_iterator(); ++it) {
    const long n = std::stol((*it)[1].str());
    if (!seen.insert(n).second) continue;
    const std::string text = n >= 1 && n <= long(lines.size()) ? lines[n - 1] : "<no such line>";
    out += "line " + std::to_string(n) + ": " + text + "\n";
  }
  return out;
}

std::string join_options(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : " ") + o;
  return out;
}

}  // namespace

std::vector<std::string> normalize_options(const std::vector<std::string>& extra) {
  std::set<std::string> set = {"-std=c++17", "-default-device"};
  for (const auto& option : extra) {
    if (option.empty()) continue;
    if (owned_by_compiler(option)) {
      throw InvalidInputError("NVRTC option '" + option +
                              "' is set by sparsejit itself (language standard, architecture and "
                              "include path are fixed); remove it");
    }
    set.insert(option);
  }
  return {set.begin(), set.end()};
}

std::string options_string(const std::vector<std::string>& normalized) { return join_options(normalized); }

std::string cuda_include_dir() {
  std::vector<fs::path> candidates;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* root = std::getenv(env);
    if (root != nullptr && *root != '\0') candidates.push_back(fs::path(root) / "include");
  }
  candidates.emplace_back("/usr/local/cuda/include");
#ifdef SPARSEJIT_CUDA_INCLUDE_DIR
  candidates.emplace_back(SPARSEJIT_CUDA_INCLUDE_DIR);
#endif
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (fs::exists(dir / "cuda_fp16.h", ec)) return dir.string();
  }
  return "";
}

CompileResult compile_to_cubin(const std::string& source, const std::string& program_name, int sm,
                               const std::vector<std::string>& normalized_options, bool arch_specific) {
  CompileResult result;
  result.options = normalized_options;
  const std::string arch = arch_name(sm, arch_specific);
  result.options.push_back("--gpu-architecture=" + arch);
  const std::string include_dir = cuda_include_dir();
  if (!include_dir.empty()) result.options.push_back("-I" + include_dir);

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram(nullptr));
  check_nvrtc(nvrtcCreateProgram(program.get(), source.c_str(), program_name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram", program_name);
  std::vector<const char*> argv;
  for (const auto& o : result.options) argv.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(*program, int(argv.size()), argv.data());
  result.log = program_log(*program);

  if (compiled != NVRTC_SUCCESS) {
    const std::string path = dump_failed_source(program_name, source);
    std::string message = "NVRTC could not compile '" + program_name + "' for " + arch + " (" +
                          nvrtcGetErrorString(compiled) + ")\noptions: " + join_options(result.options) +
                          "\nlog:\n" + result.log;
    const std::string lines = referenced_lines(result.log, source);
    if (!lines.empty()) message += "\nsource lines referenced:\n" + lines;
    message += path.empty() ? "\nthe source could not be written to disk" : "\nsource written to " + path;
    throw CompileError(message, result.log, source);
  }

  size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(*program, &size), "nvrtcGetCUBINSize", program_name);
  result.cubin.resize(size);
  check_nvrtc(nvrtcGetCUBIN(*program, result.cubin.data()), "nvrtcGetCUBIN", program_name);
  result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace sparsejit::jit
