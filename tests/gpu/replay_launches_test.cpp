// Options::replay_launches: a plan's kernels issued as one CUDA graph, built by its first call
// and replayed with each call's operands. Every call here gets new operand arrays (other
// addresses) with fresh random values and its output poisoned, so a replay that kept an earlier call's
// arguments writes the wrong array or leaves NaN; plans that do other work than launching our
// kernels (a memset of C, cuSPARSE, cuBLAS) must launch as usual and be right too.
#include <gtest/gtest.h>

#include <thread>

#include "cuda/graph.hpp"
#include "support/gpu_suite.hpp"

namespace sparsejit {
namespace {

class ReplayLaunchesGpu : public test::GpuSuite {
 protected:
  static Options replayed(const std::string& variant, bool transpose, CUstream stream = nullptr) {
    Options o;
    o.variant = variant;
    o.transpose_a = transpose;
    o.replay_launches = true;
    o.stream = stream;
    return o;
  }
};

// C = op(A)·B on `a` (its handle `da`) with new device arrays for B and C: the call's report,
// after checking C against the CPU reference.
CallInfo call_on_new_arrays(Runtime& rt, const Csr<float>& a, const DeviceCsr<float>& da, int32_t k, const Options& options,
                            uint64_t seed) {
  const bool transpose = options.transpose_a;
  Dense<float> b(transpose ? a.rows : a.cols, k), expected;
  generate::fill_random(b, seed);
  reference::spmm(a, b, expected, transpose);
  const DeviceDense<float> db(rt.context(), b);
  DeviceDense<float> dc(rt.context(), transpose ? a.cols : a.rows, k);
  dc.buffer().fill_bytes(0xFF);
  const CallInfo call = rt.spmm(da, db, dc, options);
  rt.context().synchronize();
  EXPECT_LE(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), test::gpu_tolerance<float>());
  return call;
}

TEST_F(ReplayLaunchesGpu, ReplaysFollowEachCallsOperandsAndOtherPlansLaunchAsUsual) {
  // R-MAT: long rows split between csr_merge's ranges, so its plan clears rows first (two kernels).
  const Csr<float> a = test::SpmmCase<float>::random_values(generate::from_spec("rmat:2048:30000", 5), next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  struct Case {
    std::string variant;
    bool transpose;
    bool as_graph;
  };
  for (const Case& c : std::vector<Case>{{"csr_vector", false, true},
                                         {"csr_rowsplit", false, true},
                                         {"csr_rowwarp", false, true},
                                         {"csr_merge", false, true},
                                         {"csr_merge", true, false},  // C cleared by a memset first
                                         {"rs", false, false},
                                         {"dense", false, false},
                                         {"cusparse", false, false}}) {
    for (int32_t k : {1, 48, 128}) {
      SCOPED_TRACE(c.variant + (c.transpose ? " Aᵀ·B" : " A·B") + " k=" + std::to_string(k));
      for (int round = 0; round < 3; ++round) {
        const CallInfo call = call_on_new_arrays(rt(), a, da, k, replayed(c.variant, c.transpose), next_seed());
        EXPECT_EQ(call.launched_as_graph, c.as_graph) << "round " << round;
      }
    }
  }
}

TEST_F(ReplayLaunchesGpu, SddmmReplaysFollowEachCallsOperandsAndOtherPlansLaunchAsUsual) {
  const Csr<float> s = test::SddmmCase::random_pattern("rmat:2048:30000", next_seed());
  const DeviceCsr<float> ds(rt().context(), s);
  for (const auto& [variant, as_graph] :
       std::vector<std::pair<std::string, bool>>{{"row_gather", true}, {"coo_flat", true}, {"tiled_shared", false}, {"cusparse", false}}) {
    for (int32_t k : {1, 64}) {
      SCOPED_TRACE(variant + " k=" + std::to_string(k));
      for (int round = 0; round < 3; ++round) {
        const Dense<float> a = test::SddmmCase::random_dense(s.rows, k, next_seed());
        const Dense<float> b = test::SddmmCase::random_dense(s.cols, k, next_seed());
        Csr<float> expected;
        reference::sddmm(s, a, b, expected);
        const DeviceDense<float> da(rt().context(), a), db(rt().context(), b);
        DeviceBuffer dp(rt().context(), s.values.size() * sizeof(float));  // a new P every call
        dp.fill_bytes(0xFF);
        const CallInfo call = rt().sddmm(ds, da, db, dp, replayed(variant, false));
        rt().context().synchronize();
        EXPECT_EQ(call.launched_as_graph, as_graph) << "round " << round;
        EXPECT_LE(test::relative_error(test::as_double(dp.download_as<float>(s.values.size())), test::as_double(expected.values)),
                  test::gpu_tolerance<float>());
      }
    }
  }
}

TEST_F(ReplayLaunchesGpu, AutoReplaysAndOptionsWithoutItLaunchAsUsual) {
  const Csr<float> a = test::SpmmCase<float>::random_values(generate::from_spec("uniform:3000:12", 5), next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  Options options = replayed("", false);
  options.measure = false;  // the model's plan: a kernel of ours
  for (int round = 0; round < 3; ++round) EXPECT_TRUE(call_on_new_arrays(rt(), a, da, 64, options, next_seed()).launched_as_graph);
  options.replay_launches = false;
  EXPECT_FALSE(call_on_new_arrays(rt(), a, da, 64, options, next_seed()).launched_as_graph);
}

TEST_F(ReplayLaunchesGpu, ThreadsReplayingOnePlanOnTheirOwnStreamsEachGetTheirOwnResult) {
  const Csr<float> a = test::SpmmCase<float>::random_values(generate::from_spec("rmat:4096:60000", 7), next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  constexpr int kThreads = 4, kRounds = 25;
  const uint64_t base_seed = next_seed() * 1000;
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0), replays(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Stream stream(rt().context());
      Dense<float> b(a.cols, 32), expected;
      generate::fill_random(b, base_seed + uint64_t(t));
      reference::spmm(a, b, expected, false);
      const DeviceDense<float> db(rt().context(), b);
      for (int round = 0; round < kRounds; ++round) {
        DeviceDense<float> dc(rt().context(), a.rows, 32);  // a new C every round
        dc.buffer().fill_bytes(0xFF);
        const CallInfo call = rt().spmm(da, db, dc, replayed("csr_merge", false, stream.handle()));
        replays[t] += call.launched_as_graph ? 1 : 0;
        stream.synchronize();
        if (test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)) > test::gpu_tolerance<float>())
          ++wrong[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
    EXPECT_EQ(replays[t], kRounds) << "thread " << t;
  }
}

TEST_F(ReplayLaunchesGpu, ACallInTheCallersOwnCaptureLaunchesIntoIt) {
  const Csr<float> a = test::SpmmCase<float>::random_values(generate::from_spec("rmat:2048:30000", 9), next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  Dense<float> b(a.cols, 32), expected;
  generate::fill_random(b, next_seed());
  reference::spmm(a, b, expected, false);
  const DeviceDense<float> db(rt().context(), b);
  DeviceDense<float> dc(rt().context(), a.rows, 32);
  Stream stream(rt().context());
  const Options options = replayed("csr_merge", false, stream.handle());
  rt().spmm(da, db, dc, options);  // plans and compiles outside the capture
  stream.synchronize();
  CallInfo captured;
  const cuda::CapturedGraph graph(rt().context(), stream.handle(), [&] { captured = rt().spmm(da, db, dc, options); });
  EXPECT_FALSE(captured.launched_as_graph);
  dc.buffer().fill_bytes(0xFF);
  graph.launch(stream.handle());
  stream.synchronize();
  EXPECT_LE(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), test::gpu_tolerance<float>());
}

}  // namespace
}  // namespace sparsejit
