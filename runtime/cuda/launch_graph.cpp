#include "cuda/launch_graph.hpp"

#include "cuda/driver_api.hpp"
#include "cuda/module.hpp"

namespace sparsejit::cuda {

namespace {

CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction function, const Dim3& grid, const Dim3& block, unsigned shared_bytes,
                                      void** args) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = function;
  p.gridDimX = grid.x, p.gridDimY = grid.y, p.gridDimZ = grid.z;
  p.blockDimX = block.x, p.blockDimY = block.y, p.blockDimZ = block.z;
  p.sharedMemBytes = shared_bytes;
  p.kernelParams = args;  // the values are copied by the call that takes them
  return p;
}

}  // namespace

// One run of a LaunchGraph on this thread: recording the launches into a new graph, or
// replaying them into the instantiated one.
class LaunchGraph::Session {
 public:
  // One at a time on a thread: LaunchGraph::run starts none while one is active.
  explicit Session(LaunchGraph& graph) : graph_(graph), recording_(graph.exec_ == nullptr) { active = this; }
  ~Session() { active = nullptr; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void launch(CUfunction function, const Dim3& grid, const Dim3& block, unsigned shared_bytes, void** args, bool early) {
    if (failed_) return;
    const CUDA_KERNEL_NODE_PARAMS p = kernel_params(function, grid, block, shared_bytes, args);
    if (recording_) {
      record(p, early);
    } else if (next_ < graph_.nodes_.size() && graph_.nodes_[next_].function == function && graph_.nodes_[next_].early == early) {
      SPARSEJIT_CU(cuGraphExecKernelNodeSetParams_v2, graph_.exec_, graph_.nodes_[next_].node, &p);
    } else {
      failed_ = true;  // other kernels than the graph's: rebuilt by the next call
    }
    ++next_;
  }
  void refuse() { failed_ = refused_ = true; }
  // Whether the session took every launch of the graph, and only those.
  bool complete() const { return !failed_ && next_ == graph_.nodes_.size(); }
  bool refused() const { return refused_; }

  static thread_local Session* active;

 private:
  // A node per launch, after the previous one: an early launch through a programmatic edge
  // (it may start while the previous kernel finishes, as on a stream), else a full dependency.
  void record(const CUDA_KERNEL_NODE_PARAMS& p, bool early) {
    if (graph_.graph_ == nullptr) SPARSEJIT_CU(cuGraphCreate, &graph_.graph_, 0u);
    CUgraphNode node = nullptr;
    SPARSEJIT_CU(cuGraphAddKernelNode_v2, &node, graph_.graph_, nullptr, size_t(0), &p);
    if (!graph_.nodes_.empty()) {
      CUgraphEdgeData edge{};
      if (early) {
        edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
      }
      SPARSEJIT_CU(cuGraphAddDependencies_v2, graph_.graph_, &graph_.nodes_.back().node, &node, &edge, size_t(1));
    }
    graph_.nodes_.push_back({node, p.func, early});
  }

  LaunchGraph& graph_;
  const bool recording_;
  std::size_t next_ = 0;
  bool failed_ = false;
  bool refused_ = false;
};

thread_local LaunchGraph::Session* LaunchGraph::Session::active = nullptr;

LaunchGraph::~LaunchGraph() { discard(); }

void LaunchGraph::discard() {
  // Enqueued launches of the graph still run: the driver keeps what they need.
  if (exec_ != nullptr) driver().cuGraphExecDestroy(exec_);
  if (graph_ != nullptr) driver().cuGraphDestroy(graph_);
  exec_ = nullptr, graph_ = nullptr;
  nodes_.clear();
}

bool LaunchGraph::run(const Context& context, CUstream stream, const std::function<void()>& enqueue) {
  if (Session::active != nullptr) return false;  // a graph's launches are never themselves a graph
  std::lock_guard<std::mutex> lock(mutex_);
  if (never_) return false;
  context.make_current();
  bool complete = false;
  try {
    Session session(*this);
    enqueue();
    never_ = session.refused();
    complete = session.complete() && !nodes_.empty();
  } catch (...) {
    discard();
    throw;
  }
  if (!complete) {
    if (exec_ != nullptr && ++rebuilds_ > kMaxRebuilds) never_ = true;
    discard();
    return false;
  }
  if (exec_ == nullptr) SPARSEJIT_CU(cuGraphInstantiateWithFlags, &exec_, graph_, 0ull);
  SPARSEJIT_CU(cuGraphLaunch, exec_, stream);
  return true;
}

bool LaunchGraph::take_launch(CUfunction function, const Dim3& grid, const Dim3& block, unsigned shared_bytes, void** args,
                              bool early_launch) {
  if (Session::active == nullptr) return false;
  Session::active->launch(function, grid, block, shared_bytes, args, early_launch);
  return true;
}

bool LaunchGraph::refuse_other_work() {
  if (Session::active == nullptr) return false;
  Session::active->refuse();
  return true;
}

}  // namespace sparsejit::cuda
