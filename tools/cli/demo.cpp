// `sparsejit demo`: the whole flow on a generated matrix: inspect, plan, compile, and (with a
// GPU) run auto SpMM checked against the CPU reference and timed next to cuSPARSE.
#include <chrono>
#include <cmath>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/matrix_input.hpp"
#include "plan/operand_limits.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/measure.hpp"

namespace sparsejit::cli {

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void run_on_gpu(const Csr<float>& a, int32_t k) {
  Runtime rt;
  Dense<float> b(a.cols, k);
  generate::fill_random(b, 2);
  DeviceCsr<float> da(rt.context(), a);
  DeviceDense<float> db(rt.context(), b), dc(rt.context(), a.rows, k);
  dc.buffer().fill_bytes(0xFF);  // poisoned: the check sees any element the kernel missed
  rt.spmm(da, db, dc);
  Dense<float> want;
  reference::spmm(a, b, want);
  const Dense<float> got = dc.download();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.data.size(); ++i) {
    diff += (double(got.data[i]) - want.data[i]) * (double(got.data[i]) - want.data[i]);
    norm += double(want.data[i]) * want.data[i];
  }
  const double err = std::sqrt(diff / norm);
  const double ms = tuner::time_on_stream(rt.context(), nullptr, 1, {3, 20}, [&](int, CUstream) { rt.spmm(da, db, dc); }).median_ms;
  std::cout << "ran on " << rt.device().name << ": " << ms << " ms per call ("
            << 2.0 * double(a.nnz()) * k / ms * 1e-6 << " GFLOP/s), relative error " << err << " against the CPU reference ("
            << (std::isfinite(err) && err < 1e-4 ? "passed" : "FAILED") << ")\n";
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Generate a matrix, inspect it, then plan, compile and run auto SpMM");
  static std::string spec = "clustered:100000:32:0.5:16";
  static int32_t k = 128;
  cmd->add_option("--matrix", spec, "Generator spec, with or without gen: in front: " + generate::spec_help())->capture_default_str();
  cmd->add_option("-k,--k", k, "Columns of the dense operand")->capture_default_str();
  cmd->callback([] {
    plan::check_dense_operands("spmm", k, DType::F32, {});  // K's range, before generating anything
    auto start = std::chrono::steady_clock::now();
    const Csr<float> a = load_matrix<float>(is_generator(spec) ? spec : "gen:" + spec, /*seed=*/1);
    std::cout << "generated " << spec << " in " << elapsed_ms(start) << " ms\n" << describe(inspect(a.pattern()));
    start = std::chrono::steady_clock::now();
    const Decision d = explain_spmm(a.pattern(), k, DType::F32);
    std::cout << "\nplanned and compiled in " << elapsed_ms(start) << " ms:\n" << describe(d);
    if (!driver_available()) {
      std::cout << "\nnothing ran: " << driver_unavailable_reason() << "\n";
      return;
    }
    run_on_gpu(a, k);
  });
}

}  // namespace sparsejit::cli
