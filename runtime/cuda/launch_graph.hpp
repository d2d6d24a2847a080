// A plan's kernel launches replayed as one CUDA graph. On the H200 machine's host a kernel
// launch costs about 3 µs, a graph launch 1.3 µs and updating one kernel node's arguments
// 0.2 µs, so a call whose kernels finish sooner than the host can issue them (small matrices
// called from Python) costs the host less as a replay: a one-kernel plan about half, a
// two-kernel plan a third. The graph is built from the launches of the plan's first replayed
// call and instantiated once; later calls update its kernels' arguments (new operands) and
// launch it.
// What a replay gives up: a graph launch waits for the previous work on the stream to finish,
// so its first kernel does not overlap the previous call's last one (Kernel::launch's early
// launch); inside the graph, launches made early keep that overlap (programmatic edges).
#pragma once
#include <functional>
#include <mutex>
#include <vector>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

struct Dim3;

class LaunchGraph {
 public:
  LaunchGraph() = default;
  ~LaunchGraph();
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;

  // Issues what `enqueue` launches (through Kernel::launch, on any stream: the graph runs on
  // `stream`) as one graph launch on `stream`. Returns false with nothing enqueued when the
  // launches cannot be replayed: `enqueue` did something other than launch a kernel (a memset),
  // or launched other kernels than the graph holds (the graph is then rebuilt by the next
  // call). The caller then runs `enqueue` itself. Thread-safe: calls on one graph take turns.
  bool run(const Context& context, CUstream stream, const std::function<void()>& enqueue);

  // Called by Kernel::launch: true when a graph on this thread took the launch (recorded or
  // replayed it), false when the kernel is to be launched as usual.
  static bool take_launch(CUfunction function, const Dim3& grid, const Dim3& block, unsigned shared_bytes, void** args,
                          bool early_launch);
  // Called before work that is not a kernel launch: true when a graph on this thread is
  // recording or replaying, which then gives up (run returns false) and the work must not be
  // enqueued now (the caller's direct run will enqueue it).
  static bool refuse_other_work();

 private:
  struct Node {
    CUgraphNode node;
    CUfunction function;
    bool early;
  };
  class Session;
  void discard();

  std::mutex mutex_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<Node> nodes_;
  int rebuilds_ = 0;
  // Never replayed: the plan does other work than kernel launches, or its launches changed
  // more than kMaxRebuilds times (building a graph costs more than launching its kernels).
  bool never_ = false;
  static constexpr int kMaxRebuilds = 2;
};

}  // namespace sparsejit::cuda
