#include <iostream>

#include "cli/commands.hpp"
#include "cli/matrix_input.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/io.hpp"

namespace sparsejit::cli {

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print every feature of a sparse matrix (a file or a gen: spec)");
  static std::string path;
  static bool as_json = false;
  static int32_t panel_width = 0;
  static int32_t threshold = 0;
  cmd->add_option("matrix", path, "Matrix Market (.mtx) or DLMC (.smtx) file, plain or gzip, or a generator spec gen:...")->required();
  cmd->add_flag("--json", as_json, "Print one JSON object instead of text");
  cmd->add_option("--panel-width", panel_width, "Also report the heavy/light row-segment split for this column-panel width W");
  cmd->add_option("--threshold", threshold, "Heavy row-segment threshold T for --panel-width")->default_val(2);
  cmd->callback([] {
    io::MatrixInfo info;
    const Csr<float> a = load_matrix<float>(path, /*seed=*/1, &info);
    const std::string format = is_generator(path) ? "generated " + matrix_name(path) : describe(info);
    const Features f = inspect(a.pattern());
    nlohmann::json split;
    if (panel_width != 0) split = to_json(row_segment_split(a.pattern(), panel_width, threshold));
    if (as_json) {
      nlohmann::json out = {{"format_version", kJsonFormatVersion}, {"file", path}, {"format", format}, {"features", to_json(f)}};
      if (panel_width != 0) out["split"] = split;
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::cout << path << ": " << format << "\n" << describe(f);
    if (panel_width != 0) std::cout << "row-segment split: " << split.dump() << "\n";
  });
}

}  // namespace sparsejit::cli
