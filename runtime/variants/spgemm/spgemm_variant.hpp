// What one SpGEMM variant defines (C = A·B, A m×k and B k×n sparse CSR, C a new m×n CSR with
// sorted rows). A definition file (runtime/variants/spgemm/<name>.cpp) derives from
// SpgemmVariantOf<Self> and registers itself with SPARSEJIT_REGISTER_VARIANT(spgemm, <name>,
// Self). As for SpMM (spmm_variant.hpp), the planning members are pure and the execution
// members load kernels and launch; an execution also allocates C, whose size it learns on the
// device.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/driver_api.hpp"
#include "cuda/scratch_pool.hpp"
#include "jit/kernel_spec.hpp"
#include "ops/kernel_loader.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "variants/registry.hpp"

namespace sparsejit::detail {
struct RuntimeState;
}

namespace sparsejit::variants {

// What the planning members see: the pair's features, the call's problem, the device, the op's
// model (models/spgemm.json unless tuned) and the feature values the decision records
// (to_json(features) plus value_bytes).
struct SpgemmPlanInputs {
  const SpgemmFeatures& features;
  const plan::SpgemmProblem& problem;
  const plan::DeviceTarget& device;
  const nlohmann::json& model;
  const nlohmann::json& feature_values;
};

// One call's operands as the execution sees them. A and B are not both empty here: the
// executor answers a product without products itself.
template <class T>
struct SpgemmOperands {
  const DeviceCsr<T>& a;
  const DeviceCsr<T>& b;
  CUstream stream;
  bool early;  // programmatic dependent launch (ops::launches_early)
};

// C's arrays as an execution returns them: rows + 1 offsets, nnz sorted columns per row and
// their values, complete in stream order on the call's stream (written by work enqueued there).
struct SpgemmOutput {
  DeviceBuffer row_ptr;  // int32
  DeviceBuffer col_idx;  // int32
  DeviceBuffer values;   // T
  int64_t nnz = 0;
};

// An existing C whose pattern is A·B's (made by a run on the same patterns): rows + 1
// offsets, nnz sorted columns and the values to rewrite.
struct SpgemmTarget {
  CUdeviceptr row_ptr;
  CUdeviceptr col_idx;
  CUdeviceptr values;
  int64_t nnz;
};

template <class T>
class SpgemmExecution {
 public:
  virtual ~SpgemmExecution() = default;
  // Computes C on operands.stream. May synchronize that stream once (to learn NNZ(C) before
  // allocating C's columns and values); returns with the rest enqueued.
  virtual SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& operands) const = 0;
  // The numeric phase alone: c's values for the current values of A and B, c's pattern given.
  // Enqueued on operands.stream; c's arrays may be rewritten (the columns with the same
  // values) until that work completes.
  virtual void recompute(detail::RuntimeState& rt, const SpgemmOperands<T>& operands, const SpgemmTarget& c) const = 0;
};

// recompute for a variant without a numeric phase of its own: the whole call again into a fresh
// C, whose values are copied into c's (the same pattern, so the same order); the stream is
// synchronized before the fresh arrays go.
template <class T>
void recompute_by_running(const SpgemmExecution<T>& execution, detail::RuntimeState& rt, const SpgemmOperands<T>& o,
                          const SpgemmTarget& c) {
  const SpgemmOutput fresh = execution.run(rt, o);
  if (fresh.nnz != c.nnz)
    throw InvalidInputError("spgemm_numeric: C has " + std::to_string(c.nnz) + " entries but A·B has " + std::to_string(fresh.nnz));
  SPARSEJIT_CU(cuMemcpyDtoDAsync_v2, c.values, fresh.values.ptr(), std::size_t(c.nnz) * sizeof(T), o.stream);
  SPARSEJIT_CU(cuStreamSynchronize, o.stream);
}

// What preparing an execution gets: the runtime, both handles (their caches may hold formats),
// the features and problem, and the decision (kernel origin and compile times go into it).
template <class T>
struct SpgemmPreparation {
  detail::RuntimeState& rt;
  const DeviceCsr<T>& a;
  const DeviceCsr<T>& b;
  const SpgemmFeatures& features;
  const plan::SpgemmProblem& problem;
  Decision& decision;
};

// Bytes of C's arrays for an m-row C with nnz entries of `dtype`: rows + 1 int32 offsets, nnz
// int32 columns and nnz values. Every variant returns them; the planner adds them to each
// variant's workspace for its peak.
int64_t output_bytes(int64_t m, int64_t nnz, DType dtype);

// A variant's parameters adjusted to a workspace budget, and the workspace they take.
struct WorkspaceFit {
  nlohmann::json params;
  int64_t bytes = 0;
};

class SpgemmVariant {
 public:
  using Base = SpgemmVariant;
  SpgemmVariant(std::string name, int rank, std::string summary, Traits traits = {})
      : name(std::move(name)), rank(rank), summary(std::move(summary)), traits(traits) {}
  virtual ~SpgemmVariant() = default;

  const std::string name;
  const int rank;             // place in candidate lists (Registry::all)
  const std::string summary;  // one line for `explain --list`
  const Traits traits;

  // ---- planning (pure) ----
  // Why the variant cannot run this problem at all ("" when it can). The default refuses
  // value types other than f32 and f64.
  virtual std::string rejected(const SpgemmPlanInputs& in) const;
  // Every parameter it takes, with the planner's value for this problem.
  virtual nlohmann::json defaults(const SpgemmPlanInputs& in, std::vector<DecisionStep>& path) const = 0;
  // Throws an Error naming the value when these parameters cannot run the problem here.
  virtual void check(const plan::SpgemmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const;
  // The cost terms of a run with these parameters (models/spgemm.json prices them).
  virtual nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json& params) const = 0;
  // Every complete parameter set worth measuring for this problem; check runs on each.
  virtual std::vector<nlohmann::json> search_space(const SpgemmPlanInputs& in) const = 0;
  // Device bytes a run with these parameters holds at its peak besides A, B and C's arrays
  // (output_bytes): its scratch, tables and buffers.
  virtual int64_t workspace_bytes(const SpgemmPlanInputs& in, const nlohmann::json& params) const = 0;
  // The parameters closest to `params` whose workspace is at most `budget` bytes, when the
  // call's memory does not hold what `params` takes; when no setting fits, the one with the
  // smallest workspace (the planner then rejects the variant naming its bytes). The default
  // has no other setting: `params` and their workspace.
  virtual WorkspaceFit fit_workspace(const SpgemmPlanInputs& in, const nlohmann::json& params, int64_t budget) const;

  // ---- execution ----
  // The JIT kernels a decision of this variant may launch (explain compiles them); empty for a
  // variant that runs a vendor library.
  virtual std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpgemmProblem& problem) const;
  virtual std::unique_ptr<SpgemmExecution<float>> prepare(const SpgemmPreparation<float>& p) const = 0;
  virtual std::unique_ptr<SpgemmExecution<double>> prepare(const SpgemmPreparation<double>& p) const = 0;
};

// Implements both prepare overloads with Self's member template
//   template <class T> std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>&) const;
template <class Self>
class SpgemmVariantOf : public SpgemmVariant {
 public:
  using SpgemmVariant::SpgemmVariant;
  std::unique_ptr<SpgemmExecution<float>> prepare(const SpgemmPreparation<float>& p) const override {
    return static_cast<const Self*>(this)->template make<float>(p);
  }
  std::unique_ptr<SpgemmExecution<double>> prepare(const SpgemmPreparation<double>& p) const override {
    return static_cast<const Self*>(this)->template make<double>(p);
  }
};

using SpgemmRegistry = Registry<SpgemmVariant>;

// A new array of C (bytes, on `context`): from `pool` in stream order on `stream`, or, with no
// pool, from cuMemAlloc (what the vendor's documented sequence does). When poisoning is on
// (tests only: set_poison_outputs) its bytes are set to 0xFF on `stream` first, so an element
// no kernel writes reads as NaN or as column -1 and a comparison with the reference fails.
DeviceBuffer new_output_array(const Context& context, cuda::ScratchPool* pool, std::size_t bytes, CUstream stream);
// Loads a kernel of a decision, recording in it the slowest way any of its kernels was
// obtained (compiled, cached, ...) and adding the compile and load times.
ops::LoadedKernel load_kernel(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec);

// Turns the poisoning of new output arrays on or off for the whole process (tests: C's arrays
// are fresh allocations, which may reuse memory holding a previous, identical answer).
void set_poison_outputs(bool on);

}  // namespace sparsejit::variants
