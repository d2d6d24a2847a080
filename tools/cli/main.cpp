// The sparsejit command line: one subcommand per file in tools/cli/, registered here.
//
// Every failure, the argument parser's included, is one line "sparsejit: ..." on stderr and
// exit status 1 (the README's promise); --help and --version print to stdout and exit 0.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <string>

#include "base/log.hpp"
#include "cli/commands.hpp"
#include "cli/one_line.hpp"
#include "sparsejit/error.hpp"

namespace {

int fail(const std::string& message) {
  std::cerr << "sparsejit: " << sparsejit::cli::one_line(message) << "\n";
  return 1;
}

// CLI11 answers a mistyped command with "A subcommand is required"; this names the word and
// the commands that exist: follows the command words of argv down the subcommand tree and
// returns a message for the first word that is none of them where one is required, else "".
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  std::string path = "sparsejit";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const auto commands = current->get_subcommands([](CLI::App*) { return true; });
    if (word.empty() || word[0] == '-' || commands.empty()) return "";
    const auto named = std::find_if(commands.begin(), commands.end(), [&](CLI::App* c) { return c->get_name() == word; });
    if (named != commands.end()) {
      current = *named;
      path += " " + word;
      continue;
    }
    if (current->get_require_subcommand_min() == 0) return "";
    std::string known;
    for (const CLI::App* c : commands) known += (known.empty() ? "" : ", ") + c->get_name();
    return "unknown command '" + word + "' after '" + path + "' (expected one of " + known + ")";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sparsejit: JIT-compiled sparse matrix products on NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sparsejit " SPARSEJIT_VERSION_STRING);
  sparsejit::cli::register_commands(app);
  try {
    sparsejit::require_valid_log_setting();
    if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty())
      return fail("usage error: " + unknown + " (see sparsejit --help)");
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command that printed its own failure (cache verify, bench)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return fail(std::string("usage error: ") + e.what() + " (see sparsejit --help)");
  } catch (const sparsejit::Error& e) {
    return fail(std::string(to_string(e.category())) + " error: " + e.what());
  } catch (const std::exception& e) {
    return fail(std::string("error: ") + e.what());
  }
  return 0;
}
