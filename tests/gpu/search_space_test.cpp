// Every (variant, params) the planners' search spaces offer must compute the right answer:
// the tuner measures all of them and ships whichever wins. Each candidate is forced through
// the runtime on a few shapes (fresh random values, NaN-poisoned output) and compared with the
// CPU reference. The candidate is printed before it runs, so a crash names it.
#include <gtest/gtest.h>

#include <iostream>

#include "plan/planner.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"
#include "tuner/search_space.hpp"

namespace sparsejit {
namespace {

using test::as_double;

class SearchSpaceGpu : public test::GpuSuite {};

plan::DeviceTarget target_of(const Runtime& rt) {
  plan::DeviceTarget t;
  t.name = rt.device().name;
  t.sm = rt.device().sm;
  t.multiprocessors = rt.device().multiprocessors;
  t.shared_per_block_optin = rt.device().shared_mem_per_block_optin;
  t.shared_per_sm = rt.device().shared_mem_per_sm;
  t.present = true;
  return t;
}

TEST_F(SearchSpaceGpu, EverySddmmCandidateMatchesTheReference) {
  Runtime& rt = GpuSuite::rt();
  const uint64_t seed = next_seed();
  for (const auto& [spec, k] : std::vector<std::pair<std::string, int32_t>>{
           {"band:100000:16:64", 128}, {"uniform:3000:9", 33}, {"rmat:4096:40000", 128}, {"blockdiag:1500:30:2", 32},
           {"uniform:512:200", 64}, {"uniform:4096:64", 128}}) {  // the last: panel_gather proposed (512 tiles)
    Csr<float> s = cast<float>(generate::from_spec(spec, 5));
    generate::fill_random(s.values, seed);
    Dense<float> a(s.rows, k), b(s.cols, k);
    generate::fill_random(a, seed + 1);
    generate::fill_random(b, seed + 2);
    Csr<float> want;
    reference::sddmm(s, a, b, want);
    DeviceCsr<float> ds(rt.context(), s);
    DeviceDense<float> da(rt.context(), a), db(rt.context(), b);
    DeviceBuffer dp(rt.context(), s.values.size() * sizeof(float));
    const plan::SddmmProblem problem{k, DType::F32, k, k};
    const auto space = tuner::sddmm_candidates(inspect(s.pattern()), problem, target_of(rt));
    ASSERT_FALSE(space.empty());
    for (std::size_t i = 0; i < space.size(); ++i) {
      const auto& c = space[i];
      std::cerr << spec << " k=" << k << " candidate " << i << ": " << c.variant << " " << c.params.dump() << std::endl;
      Options o;
      o.variant = c.variant;
      o.params = c.params;
      o.reuse = tuner::reuse_for(Op::SDDMM, c.variant);
      dp.fill_bytes(0xFF);
      rt.sddmm(ds, da, db, dp, o);
      rt.context().synchronize();
      const double err = test::relative_error(as_double(dp.download_as<float>(s.values.size())), as_double(want.values));
      ASSERT_LE(err, 1e-5) << spec << " k=" << k << " " << c.variant << " " << c.params.dump() << " seed " << seed;
    }
  }
}

TEST_F(SearchSpaceGpu, EverySpmmCandidateMatchesTheReference) {
  Runtime& rt = GpuSuite::rt();
  const uint64_t seed = next_seed();
  for (const auto& [spec, k] : std::vector<std::pair<std::string, int32_t>>{
           {"uniform:3000:9", 33}, {"rmat:4096:40000", 128}, {"clustered:2048:24:0.6:16", 512}}) {
    for (bool transpose : {false, true}) {
      Csr<float> a = cast<float>(generate::from_spec(spec, 5));
      generate::fill_random(a.values, seed);
      const int32_t inner = transpose ? a.rows : a.cols, outer = transpose ? a.cols : a.rows;
      Dense<float> b(inner, k);
      generate::fill_random(b, seed + 1);
      Dense<float> want;
      reference::spmm(a, b, want, transpose);
      DeviceCsr<float> da(rt.context(), a);
      DeviceDense<float> db(rt.context(), b), dc(rt.context(), outer, k);
      const plan::SpmmProblem problem{k, DType::F32, transpose, k, k};
      const auto space = tuner::spmm_candidates(inspect(a.pattern()), problem, target_of(rt));
      ASSERT_FALSE(space.empty());
      for (std::size_t i = 0; i < space.size(); ++i) {
        const auto& c = space[i];
        std::cerr << spec << " k=" << k << (transpose ? " T" : "") << " candidate " << i << ": " << c.variant << " "
                  << c.params.dump() << std::endl;
        Options o;
        o.variant = c.variant;
        o.params = c.params;
        o.transpose_a = transpose;
        dc.buffer().fill_bytes(0xFF);
        rt.spmm(da, db, dc, o);
        rt.context().synchronize();
        const double err = test::relative_error(as_double(dc.download().data), as_double(want.data));
        ASSERT_LE(err, 1e-5) << spec << " k=" << k << " " << c.variant << " " << c.params.dump() << " seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace sparsejit
