// What the planner asks the JIT for: a template, its entry point and every value it needs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sparsejit::jit {

struct KernelSpec {
  // A templates/*.mustache file name without ".mustache", e.g. "spmm_csr_rowwarp.cu".
  std::string template_name;
  // The extern "C" entry point; the templates read it from params["kernel_name"], and the
  // Compiler fills that in from here when params lacks it.
  std::string kernel_name;
  // Values substituted into the template: strings and numbers render as text, bools drive
  // {{#flag}} / {{^flag}} sections. Every name the template reads must be present.
  nlohmann::json params = nlohmann::json::object();
  // Extra NVRTC options (e.g. "--use_fast_math"); normalized and part of the cache key.
  std::vector<std::string> extra_options;
  // Compile for the architecture-specific target sm_XYa (features of exactly that
  // architecture, e.g. sm_90a's wgmma): such a binary runs only on sm_XY itself.
  bool arch_specific = false;
};

}  // namespace sparsejit::jit
