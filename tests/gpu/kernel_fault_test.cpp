// A kernel that faults (issue 27). Forced parameters are range-checked before anything reaches
// a kernel, so the fault is forced the one way left: a template override (SPARSEJIT_TEMPLATE_DIR)
// whose kernels all store to an unmapped address before anything else. A fault loses the CUDA
// context of the process it happens in, so every step runs the CLI in a process of its own:
// the faulting run ends with one line naming the lost context and status 1 (no abort while
// unwinding), the cache it used stays sound, and a new process on that cache computes the
// right answer (docs/RELIABILITY.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "jit/embedded_templates.hpp"
#include "sparsejit/device.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

namespace fs = std::filesystem;

// Every embedded template into `dir`, the early-launch wait (which every kernel calls first)
// made to store to address 16, where nothing is mapped.
void write_faulting_templates(const fs::path& dir) {
  fs::create_directories(dir);
  const std::string wait = "void sj_wait_for_predecessor() {";
  bool faulting = false;
  for (const jit::EmbeddedFile& t : jit::embedded_templates()) {
    std::string text = t.text;
    if (const auto at = text.find(wait); at != std::string::npos) {
      text.insert(at + wait.size(), "\n  *reinterpret_cast<volatile int*>(16ull) = 1;  // forced fault (kernel_fault_test)\n");
      faulting = true;
    }
    std::ofstream(dir / (std::string(t.name) + ".mustache"), std::ios::binary) << text;
  }
  ASSERT_TRUE(faulting) << "no template defines sj_wait_for_predecessor any more";
}

TEST(KernelFault, NamesTheLostContextAndANewProcessRunsOnTheSameCache) {
  if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
  const fs::path dir = test::fresh_dir("kernel_fault");
  write_faulting_templates(dir / "templates");
  const std::string cache = "SPARSEJIT_CACHE_DIR=" + (dir / "cache").string();
  const std::string run = "run gen:uniform:2000:8 --op spmm -k 32 --variant csr_rowwarp --repeat 1 --check";

  const test::CliResult faulted = test::run_cli(run, cache + " SPARSEJIT_TEMPLATE_DIR=" + (dir / "templates").string());
  EXPECT_EQ(faulted.status, 1) << faulted.out;
  EXPECT_EQ(std::count(faulted.out.begin(), faulted.out.end(), '\n'), 1) << faulted.out;
  EXPECT_EQ(faulted.out.rfind("sparsejit: CUDA error: ", 0), 0u) << faulted.out;
  EXPECT_NE(faulted.out.find("the CUDA context is lost"), std::string::npos) << faulted.out;
  EXPECT_NE(faulted.out.find("restart the process"), std::string::npos) << faulted.out;

  const test::CliResult again = test::run_cli(run, cache);
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("check passed"), std::string::npos) << again.out;
  const test::CliResult verify = test::run_cli("cache verify --dir " + (dir / "cache").string());
  EXPECT_EQ(verify.status, 0) << verify.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsejit
