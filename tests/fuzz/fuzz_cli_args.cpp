// The command line's argument parsing: fuzzed argv vectors given to the app `sparsejit`
// builds (cli/app.hpp), with every command's action removed, so what runs is CLI11's parsing,
// each option's conversion and checks, the unknown-command search and the mapping of errors to
// messages. Whatever the arguments, the result is status 0 (parsed, or --help / --version
// printed) or status 1 with exactly one line "sparsejit: ..." of printable bytes; anything
// else (another status, a second line, a crash, a sanitizer report) is a finding. Reading
// matrices and generator specs, which the actions would do, has harnesses of its own.
//
// Input: the arguments after the program name, separated by NUL bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"

namespace {

// Parsing only: no command may run (they read files, compile kernels, use the GPU).
void remove_actions(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    command->callback(std::function<void()>());
    remove_actions(*command);
  }
}

// Built once, as main() builds it: CLI11 clears the previous parse's results before each parse.
CLI::App& the_app() {
  static CLI::App* app = [] {
    auto* built = new CLI::App{"sparsejit"};
    sparsejit::cli::build_app(*built);
    remove_actions(*built);
    return built;
  }();
  return *app;
}

std::vector<std::string> arguments(const uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"sparsejit"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] != 0) {
      current += char(data[i]);
      continue;
    }
    args.push_back(current);
    current.clear();
  }
  args.push_back(current);
  return args;
}

[[noreturn]] void finding(const std::string& what, int status, const std::string& err) {
  std::fprintf(stderr, "fuzz_cli_args: %s (status %d): %s\n", what.c_str(), status, err.c_str());
  std::abort();
}

bool one_printable_line(const std::string& text) {
  if (text.rfind("sparsejit: ", 0) != 0 || text.find('\n') != text.size() - 1) return false;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::vector<std::string> args = arguments(data, size);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = sparsejit::cli::run_app(the_app(), int(argv.size()), argv.data(), out, err);
  if (status == 0) return 0;
  if (status != 1) finding("an exit status other than 0 and 1", status, err.str());
  if (!one_printable_line(err.str())) finding("a failure that is not one line \"sparsejit: ...\"", status, err.str());
  return 0;
}
