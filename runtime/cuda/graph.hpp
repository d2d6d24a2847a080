// Stream capture into a CUDA graph, for timing many short launches: replaying a captured
// graph submits all its work at once, so the device runs it back to back without the host's
// per-launch cost between kernels (METHOD.md: "For many small launches, capture a graph and
// time its replays").
#pragma once
#include <functional>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

class CapturedGraph {
 public:
  // Captures everything `record` enqueues on `stream` (which must not be the legacy default
  // stream: it cannot be captured). A call that cannot be captured (a synchronous copy, a
  // synchronize) throws CudaError naming it; the capture is ended either way, so the stream
  // is usable afterwards.
  CapturedGraph(const Context& context, CUstream stream, const std::function<void()>& record);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  // Enqueues one replay of the captured work on `stream`.
  void launch(CUstream stream) const;

 private:
  Context context_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Whether work enqueued on `stream` now would be captured into a graph rather than run: the
// stream (or, for the legacy stream, a blocking stream it would join) is capturing. A status
// that cannot be read counts as capturing, so callers skip what a capture forbids.
bool is_capturing(const Context& context, CUstream stream);

}  // namespace sparsejit::cuda
