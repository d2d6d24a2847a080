// Steps every op executor shares: the handle's cached features, the plan-cache key of a
// call, and recording how a kernel was obtained in the Decision.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "cuda/graph.hpp"
#include "cuda/launch_graph.hpp"
#include "ops/kernel_loader.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::ops {

// The features of a handle's pattern, measured on first use and cached on the handle.
template <class T>
std::shared_ptr<const Features> cached_features(const DeviceCsr<T>& matrix) {
  return matrix.template get_or_create<Features>(
      "features", [&] { return std::make_shared<Features>(inspect(matrix.host_pattern())); });
}

// Everything the planner's answer depends on besides the pattern and the runtime: op, value
// type, K, transpose, a forced choice, whether auto may measure its shortlist. The executors
// append what their op adds (operand layout, reuse); measured selections are stored in the
// cache database under it.
std::string problem_key(Op op, DType dtype, int32_t k, bool transpose, const Options& options);
// Identifies a prepared plan on a matrix handle: the problem key and the runtime (a plan holds
// the runtime's handles and kernels).
std::string handle_key(const std::string& problem_key, uint64_t runtime_id);
// problem_key and handle_key in one, for ops that add nothing to the problem key.
std::string plan_key(Op op, DType dtype, int32_t k, bool transpose, const Options& options, uint64_t runtime_id);

void record_kernel(Decision& decision, const LoadedKernel& loaded);

// Device ms of one `call` (which enqueues on `stream`, a created stream): one untimed call
// (what a plan builds lazily, such as cuSPARSE's per-operand preparation, happens there), one
// probe call timed with events, then repeats_after(probe ms) calls launched back to back
// between two events (no graph capture: see call_common.cpp); none when it answers 0 (the
// probe is the measurement). Returns after the device has finished.
double time_device_calls(const Context& context, CUstream stream, const std::function<void()>& call,
                         const std::function<int(double probe_ms)>& repeats_after);

// The value types the kernels and the vendor wrappers are built for; the planners reject the
// others before anything is prepared.
template <class T>
constexpr bool kFloatOrDouble = std::is_same_v<T, float> || std::is_same_v<T, double>;

// Whether a call's kernels launch early (Options::early_launch; the attribute exists from sm_90 on).
inline bool launches_early(const Options& options, int sm) { return options.early_launch && sm >= 90; }

// Enqueues one call of a plan: as a replay of its `graph` when the call asks for it
// (Options::replay_launches), the plan only launches kernels and `stream` is not being captured
// (the caller's graph then takes the launches); else `enqueue` runs as usual. Returns whether
// the graph was launched.
template <class Enqueue>
bool launch_plan(const Context& context, cuda::LaunchGraph& graph, bool replay, bool launches_only, CUstream stream,
                 Enqueue&& enqueue) {
  if (replay && launches_only && !cuda::is_capturing(context, stream) && graph.run(context, stream, enqueue)) return true;
  enqueue();
  return false;
}

// Grid size for `work` items at `per_block` items per block; UnsupportedError past the grid limit.
unsigned blocks_for(int64_t work, int64_t per_block);

}  // namespace sparsejit::ops
