#include "ops/call_common.hpp"

#include <cstdlib>

#include "sparsejit/error.hpp"

namespace sparsejit::ops {

// Built on every call (the plan cache's lookup): one string, reserved once, appended to.
std::string problem_key(Op op, DType dtype, int32_t k, bool transpose, const Options& options) {
  std::string key;
  key.reserve(96);
  key.append("plan:").append(to_string(op)).append(":").append(to_string(dtype)).append(":k").append(std::to_string(k));
  key.append(transpose ? ":t" : ":n");
  if (options.forces_variant()) key.append(":force=").append(options.variant).append(options.params.dump());
  if (!options.measure) key.append(":unmeasured");
  if (const char* env = std::getenv("SPARSEJIT_FORCE"); env != nullptr && *env != '\0') key.append(":env=").append(env);
  return key;
}

std::string handle_key(const std::string& problem_key, uint64_t runtime_id) {
  std::string key;
  key.reserve(problem_key.size() + 24);
  key.append(problem_key).append(":rt").append(std::to_string(runtime_id));
  return key;
}

std::string plan_key(Op op, DType dtype, int32_t k, bool transpose, const Options& options, uint64_t runtime_id) {
  return handle_key(problem_key(op, dtype, k, transpose, options), runtime_id);
}

void record_kernel(Decision& decision, const LoadedKernel& loaded) {
  decision.kernel_origin = loaded.origin;
  decision.compile_ms = loaded.compile_ms;
  decision.load_ms = loaded.load_ms;
}

// Back-to-back launches between two events, not a captured graph: a runtime is shared by
// threads, and a capture on one thread fails every context synchronization made meanwhile on
// another (a dropped SpGEMM result's release) and is invalidated by it; under the 8-thread soak
// that crashed the process inside the driver. The launches' host time is part of what a
// caller pays anyway.
double time_device_calls(const Context& context, CUstream stream, const std::function<void()>& call,
                         const std::function<int(double probe_ms)>& repeats_after) {
  call();
  const Event start(context), end(context);
  start.record(stream);
  call();
  end.record(stream);
  const double probe_ms = double(elapsed_ms(start, end));
  const int repeats = repeats_after(probe_ms);
  if (repeats == 0) return probe_ms;
  start.record(stream);
  for (int i = 0; i < repeats; ++i) call();
  end.record(stream);
  return double(elapsed_ms(start, end)) / repeats;
}

unsigned blocks_for(int64_t work, int64_t per_block) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks > 0x7fffffffLL)
    throw UnsupportedError("launch needs " + std::to_string(blocks) + " blocks, more than the grid limit 2^31-1");
  return unsigned(std::max<int64_t>(blocks, 1));
}

}  // namespace sparsejit::ops
