// The benchmark clocks on a real GPU: graph replays run the captured calls (their output is
// the reference's), agree with per-call events where the device work dominates, need a
// created stream, and leave the stream usable when a call cannot be captured.
#include <gtest/gtest.h>

#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"
#include "sparsejit/error.hpp"
#include "tuner/measure.hpp"

namespace sparsejit {
namespace {

class Clocks : public test::GpuSuite {};

tuner::TimingOptions graph_clock(int warmup) {
  tuner::TimingOptions o{warmup, 7, tuner::Clock::Graph, 4};
  return o;
}

TEST_F(Clocks, GraphReplaysRunTheCapturedCalls) {
  test::SpmmCase<float> c(rt(), generate::uniform(3000, 2000, 9, next_seed()), 40, false, next_seed());
  Stream stream(rt().context());
  Options options;
  options.stream = stream.handle();
  rt().spmm(c.da, c.db, c.dc, options);  // plan and kernels first: preparation is not capturable
  c.dc.buffer().fill_bytes(0xFF);
  // No warm-up: only the graph's replays write C.
  const tuner::Timing t = tuner::time_on_stream(rt().context(), stream.handle(), 1, graph_clock(0),
                                                [&](int, CUstream) { rt().spmm(c.da, c.db, c.dc, options); });
  stream.synchronize();
  EXPECT_GT(t.median_ms, 0.0);
  EXPECT_EQ(t.samples_ms.size(), 7u);
  EXPECT_LT(test::relative_error(test::as_double(c.dc.download().data), test::as_double(c.expected.data)),
            test::gpu_tolerance<float>());
}

TEST_F(Clocks, GraphAndEventsAgreeWhenTheDeviceWorkDominates) {
  test::SpmmCase<float> c(rt(), generate::uniform(200000, 200000, 16, next_seed()), 128, false, next_seed());
  Stream stream(rt().context());
  Options options;
  options.stream = stream.handle();
  const auto call = [&](int, CUstream) { rt().spmm(c.da, c.db, c.dc, options); };
  const double graph = tuner::time_on_stream(rt().context(), stream.handle(), 1, graph_clock(3), call).median_ms;
  const double events = tuner::time_on_stream(rt().context(), stream.handle(), 1, {3, 7}, call).median_ms;
  // A call of this size runs for about 0.1 ms; the host's microseconds per launch are hidden.
  EXPECT_GT(graph, 0.7 * events) << "graph " << graph << " ms, events " << events << " ms";
  EXPECT_LT(graph, 1.3 * events) << "graph " << graph << " ms, events " << events << " ms";
}

TEST_F(Clocks, GraphNeedsACreatedStream) {
  EXPECT_THROW(tuner::time_on_stream(rt().context(), nullptr, 1, graph_clock(0), [](int, CUstream) {}), InvalidInputError);
}

TEST_F(Clocks, AnUncapturableCallThrowsAndTheStreamStaysUsable) {
  Stream stream(rt().context());
  const auto synchronizing = [&](int, CUstream s) { Stream::wrap(rt().context(), s).synchronize(); };
  EXPECT_THROW(tuner::time_on_stream(rt().context(), stream.handle(), 1, graph_clock(0), synchronizing), CudaError);
  DeviceBuffer buffer(rt().context(), 1 << 20);
  const auto fill = [&](int, CUstream s) { buffer.fill_bytes_async(7, s); };
  EXPECT_GT(tuner::time_on_stream(rt().context(), stream.handle(), 1, {1, 3}, fill).median_ms, 0.0);
  EXPECT_GT(tuner::time_on_stream(rt().context(), stream.handle(), 1, graph_clock(1), fill).median_ms, 0.0);
}

}  // namespace
}  // namespace sparsejit
