#include "cli/app.hpp"

#include <algorithm>
#include <string>

#include "base/log.hpp"
#include "cli/commands.hpp"
#include "cli/one_line.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cli {

namespace {

int fail(std::ostream& err, const std::string& message) {
  err << "sparsejit: " << one_line(message) << "\n";
  return 1;
}

// CLI11 answers a mistyped command with "A subcommand is required"; this names the word and
// the commands that exist: follows the command words of argv down the subcommand tree and
// returns a message for the first word that is none of them where one is required, else "".
std::string unknown_command(CLI::App& app, int argc, const char* const* argv) {
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

void build_app(CLI::App& app) {
  app.require_subcommand(1);
  app.set_version_flag("--version", "sparsejit " SPARSEJIT_VERSION_STRING);
  register_commands(app);
}

int run_app(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    require_valid_log_setting();
    if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty())
      return fail(err, "usage error: " + unknown + " (see sparsejit --help)");
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e, out, err);
  } catch (const CLI::RuntimeError& e) {  // a command that printed its own failure (cache verify, bench)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return fail(err, std::string("usage error: ") + e.what() + " (see sparsejit --help)");
  } catch (const Error& e) {
    return fail(err, std::string(to_string(e.category())) + " error: " + e.what());
  } catch (const std::exception& e) {
    return fail(err, std::string("error: ") + e.what());
  }
  return 0;
}

}  // namespace sparsejit::cli
