#include <iostream>

#include "cli/call_options.hpp"
#include "cli/commands.hpp"
#include "cli/matrix_input.hpp"
#include "cli/spamm_input.hpp"
#include "plan/planner.hpp"
#include "variants/catalog.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::cli {

namespace {

// SpAMM C ≈ A·A on a decay matrix: the selection (computed on the CPU as the device would),
// then the Decision.
template <class T>
void explain_spamm_as(const Dense<double>& a, const std::string& input, const SpammOptions& options, bool as_json) {
  const Dense<T> typed = cast<T>(a);
  SpammInfo info;
  const Decision d = explain_spamm(typed, typed, options, &info);
  if (as_json) {
    nlohmann::json out = to_json(d);
    out["matrix"] = input;
    out["search_iterations"] = info.search_iterations;
    out["format_version"] = kJsonFormatVersion;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << input << " (" << a.rows << "x" << a.cols << " dense), C ≈ A·A, precision " << to_string(options.precision) << "\n"
            << "  " << describe_selection(info) << "\n"
            << describe(d);
}

void explain_spamm_input(const std::string& input, const std::string& dtype, const std::string& variant, const SpammArgs& args,
                         bool as_json) {
  const SpammOptions options = spamm_options(args, variant);
  const Dense<double> a = spamm_matrix(input);
  const DType type = parse_dtype(dtype);
  if (type == DType::F64) explain_spamm_as<double>(a, input, options, as_json);
  else if (type == DType::F32) explain_spamm_as<float>(a, input, options, as_json);
  else throw UnsupportedError(std::string("explain --op spamm: f32 and f64, not ") + to_string(type));
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("explain", "Plan (and compile) an operation without running it, and show why");
  static std::string input, op = "spmm", dtype = "f32", variant;
  static int32_t k = 128;
  static bool transpose = false, as_json = false, list = false;
  static int64_t memory_limit = 0;
  static SpammArgs spamm;
  cmd->add_option("matrix", input, std::string("Matrix file or gen:SPEC; for --op spamm a dense ") + kSpammSpecHelp);
  cmd->add_option("--op", op, "spmm | sddmm | spgemm (C = A·A) | spamm (C ≈ A·A)")->capture_default_str();
  cmd->add_option("-k,--k", k, "Columns of the dense operands (SpMM: of B and C; SDDMM: the inner dimension; SpGEMM: unused)")->capture_default_str();
  cmd->add_option("--dtype", dtype, "f32 | f64")->capture_default_str();
  cmd->add_option("--variant", variant, "Force a variant, with parameters as SPARSEJIT_FORCE takes them: NAME[:key=value,...], e.g. rs:threshold=8");
  cmd->add_flag("--transpose", transpose, "SpMM: C = Aᵀ·B");
  cmd->add_flag("--json", as_json, "Print the Decision record as JSON");
  cmd->add_flag("--list", list, "List the variants of --op and exit");
  static const CLI::Option* memory_limit_given = nullptr;  // this command's option (the command may be built again)
  memory_limit_given = add_memory_limit_option(cmd, memory_limit);
  add_spamm_options(cmd, spamm);
  cmd->callback([] {
    const Op parsed_op = parse_op(op);
    if (list) {
      for (const variants::VariantInfo& v : variants::catalog(parsed_op)) {
        const std::string flags = variants::describe_traits(v.traits);
        std::cout << v.name << "  " << v.summary << (flags.empty() ? "" : " [" + flags + "]") << "\n";
      }
      return;
    }
    if (input.empty()) throw InvalidInputError("explain: a matrix (file or gen:SPEC) is required");
    Options options = call_options(parsed_op, variant, transpose);
    apply_memory_limit(options, parsed_op, *memory_limit_given, memory_limit);
    if (parsed_op == Op::SpAMM) {
      explain_spamm_input(input, dtype, variant, spamm, as_json);
      return;
    }
    const DType type = parse_dtype(dtype);
    const Csr<float> a = load_matrix<float>(input, 1);
    if (parsed_op == Op::SpGEMM && a.rows != a.cols)
      throw InvalidInputError("explain --op spgemm multiplies the matrix by itself, so it must be square; " + matrix_name(input) +
                              " is " + std::to_string(a.rows) + "x" + std::to_string(a.cols));
    const Decision d = parsed_op == Op::SpMM    ? explain_spmm(a.pattern(), k, type, options)
                       : parsed_op == Op::SDDMM ? explain_sddmm(a.pattern(), k, type, options)
                                                : explain_spgemm(a.pattern(), a.pattern(), type, options);
    if (as_json) {
      nlohmann::json out = to_json(d);
      out["matrix"] = matrix_name(input);
      out["format_version"] = kJsonFormatVersion;
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << matrix_name(input) << " (" << a.rows << "x" << a.cols << ", " << a.nnz() << " nonzeros), "
                << (parsed_op == Op::SpGEMM ? std::string("C = A·A") : "k = " + std::to_string(k)) << "\n"
                << describe(d);
      if (parsed_op == Op::SpGEMM) std::cout << "  " << describe_spgemm_memory(d) << "\n";
    }
  });
}

}  // namespace sparsejit::cli
