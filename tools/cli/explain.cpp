#include <iostream>

#include "cli/commands.hpp"
#include "cli/matrix_input.hpp"
#include "plan/planner.hpp"
#include "variants/catalog.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::cli {

void add_explain_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("explain", "Plan (and compile) an operation without running it, and show why");
  static std::string input, op = "spmm", dtype = "f32", variant;
  static int32_t k = 128;
  static bool transpose = false, as_json = false, list = false;
  cmd->add_option("matrix", input, "Matrix file or gen:SPEC");
  cmd->add_option("--op", op, "spmm | sddmm | spgemm (C = A·A)")->capture_default_str();
  cmd->add_option("-k", k, "Columns of the dense operands (SpMM: of B and C; SDDMM: the inner dimension; SpGEMM: unused)")->capture_default_str();
  cmd->add_option("--dtype", dtype, "f32 | f64")->capture_default_str();
  cmd->add_option("--variant", variant, "Force a variant (as SPARSEJIT_FORCE does)");
  cmd->add_flag("--transpose", transpose, "SpMM: C = Aᵀ·B");
  cmd->add_flag("--json", as_json, "Print the Decision record as JSON");
  cmd->add_flag("--list", list, "List the variants of --op and exit");
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
    const Csr<float> a = load_matrix<float>(input, 1);
    Options options;
    options.variant = variant;
    options.transpose_a = transpose;
    const DType type = parse_dtype(dtype);
    if (parsed_op == Op::SpGEMM && a.rows != a.cols)
      throw InvalidInputError("explain --op spgemm multiplies the matrix by itself, so it must be square; " + matrix_name(input) +
                              " is " + std::to_string(a.rows) + "x" + std::to_string(a.cols));
    const Decision d = parsed_op == Op::SpMM    ? explain_spmm(a.pattern(), k, type, options)
                       : parsed_op == Op::SDDMM ? explain_sddmm(a.pattern(), k, type, options)
                                                : explain_spgemm(a.pattern(), a.pattern(), type, options);
    if (as_json) {
      nlohmann::json out = to_json(d);
      out["matrix"] = matrix_name(input);
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << matrix_name(input) << " (" << a.rows << "x" << a.cols << ", " << a.nnz() << " nonzeros), "
                << (parsed_op == Op::SpGEMM ? std::string("C = A·A") : "k = " + std::to_string(k)) << "\n"
                << describe(d);
    }
  });
}

}  // namespace sparsejit::cli
