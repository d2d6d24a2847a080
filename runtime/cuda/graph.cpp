#include "cuda/graph.hpp"

#include "cuda/context.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cuda {

namespace {

// Ends a capture that `record` left open by throwing, discarding the partial graph.
void abandon_capture(CUstream stream) noexcept {
  CUgraph partial = nullptr;
  if (driver().cuStreamEndCapture(stream, &partial) == CUDA_SUCCESS && partial != nullptr) driver().cuGraphDestroy(partial);
}

}  // namespace

bool is_capturing(const Context& context, CUstream stream) {
  context.make_current();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver().cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

CapturedGraph::CapturedGraph(const Context& context, CUstream stream, const std::function<void()>& record)
    : context_(context) {
  if (stream == nullptr) throw InvalidInputError("graph capture needs a created stream, not the legacy default stream");
  context.make_current();
  // Relaxed: other threads of the process may make calls that are unsafe during a capture
  // (allocations); only this stream's work is recorded.
  SPARSEJIT_CU(cuStreamBeginCapture_v2, stream, CU_STREAM_CAPTURE_MODE_RELAXED);
  try {
    record();
  } catch (...) {
    abandon_capture(stream);
    throw;
  }
  SPARSEJIT_CU(cuStreamEndCapture, stream, &graph_);
  const CUresult instantiated = driver().cuGraphInstantiateWithFlags(&exec_, graph_, 0);
  if (instantiated != CUDA_SUCCESS) {
    driver().cuGraphDestroy(graph_);
    check(instantiated, "cuGraphInstantiateWithFlags");
  }
}

CapturedGraph::~CapturedGraph() {
  try {
    context_.make_current();
    if (exec_ != nullptr) driver().cuGraphExecDestroy(exec_);
    if (graph_ != nullptr) driver().cuGraphDestroy(graph_);
  } catch (const Error&) {
  }
}

void CapturedGraph::launch(CUstream stream) const {
  context_.make_current();
  SPARSEJIT_CU(cuGraphLaunch, exec_, stream);
}

}  // namespace sparsejit::cuda
