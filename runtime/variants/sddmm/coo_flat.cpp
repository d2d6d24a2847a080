// coo_flat (GPU-Convert): one pass over the nonzeros, rows of A and B gathered per nonzero. A
// group of lanes shares one nonzero's dot product (nnz_per_group nonzeros in turn); the rows
// come from the COO row array cached on the handle (shared with SpMM's csr_merge).
#include <algorithm>

#include "formats/coo_rows.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

// Threads that share one nonzero's dot product: enough to cover K in one vector step, between
// 4 and 32 (a power of two, so the shuffle reduction is a tree).
int coo_group_size(const plan::SddmmProblem& p, int width) {
  const int steps = (p.k + width - 1) / width;
  int g = 4;
  while (g < 32 && g < steps) g *= 2;
  return g;
}

jit::KernelSpec coo_flat_spec(const Decision& d, DType dtype) {
  const bool f64 = dtype == DType::F64;
  const int width = d.params.at("vector_width").get<int>();
  return {"sddmm_coo_flat.cu", "sj_sddmm_coo_flat",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"group_size", d.params.at("group_size")}, {"nnz_per_group", d.params.at("nnz_per_group")},
           {"block_size", d.params.at("threads_per_block")},
           {"vec4", width > 1}, {"vec_t", f64 ? "double2" : "float4"}, {"vec_width", width},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

template <class T>
class CooFlatExecution final : public SddmmExecution<T> {
 public:
  CooFlatExecution(Launch launch, std::shared_ptr<const DeviceBuffer> coo_rows)
      : launch_(std::move(launch)), coo_rows_(std::move(coo_rows)) {}
  void run(detail::RuntimeState&, const SddmmOperands<T>& o) override {
    long long nnz = o.s.nnz();
    int k = o.a.cols();
    CUdeviceptr rows = coo_rows_->ptr(), cols = o.s.col_idx().ptr(), sv = o.s.values().ptr();
    CUdeviceptr ap = o.a.buffer().ptr(), bp = o.b.buffer().ptr(), pp = o.p.ptr();
    long long lda = o.a.ld(), ldb = o.b.ld();
    void* args[] = {&nnz, &k, &rows, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
    launch_(args, o.stream, o.early);
  }
  bool launches_only() const override { return true; }

 private:
  Launch launch_;
  std::shared_ptr<const DeviceBuffer> coo_rows_;
};

}  // namespace

class CooFlat final : public SddmmVariantOf<CooFlat> {
 public:
  CooFlat()
      : SddmmVariantOf("coo_flat", 10, "GPU-Convert: one pass over the nonzeros, rows of A and B gathered per nonzero") {}

  nlohmann::json defaults(const SddmmPlanInputs& in) const override {
    const int width = vector_width(in.problem);
    const int group = coo_group_size(in.problem, width);
    const int64_t per_group = std::min<int64_t>(launch_value(in.model, name, "nnz_per_group").get<int64_t>(), group);
    return {{"vector_width", width}, {"group_size", group}, {"nnz_per_group", per_group},
            {"threads_per_block", launch_value(in.model, name, "threads_per_block")}};
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    check_vector_width(params, problem, name);
    const int64_t group = check_group_size(params, name);
    check_threads(params, name, group);
    const int64_t per = int_param(params, name, "nnz_per_group");
    require(per >= 1 && per <= group, name,
            "nnz_per_group = " + std::to_string(per) + " outside [1, group_size = " + std::to_string(group) + "]");
  }

  nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json&) const override {
    return gathered_rows_terms(in.features, in.problem, 1.0);
  }

  // Half and twice the nonzeros per group and the group.
  std::vector<nlohmann::json> neighbour_changes(const plan::SddmmProblem&, const plan::DeviceTarget&,
                                                const nlohmann::json& params) const override {
    const auto get = [&](const char* key) { return params.at(key).get<int64_t>(); };
    return {{{"nnz_per_group", get("nnz_per_group") / 2}},
            {{"nnz_per_group", get("nnz_per_group") * 2}},
            {{"group_size", get("group_size") / 2}, {"nnz_per_group", std::min(get("nnz_per_group"), get("group_size") / 2)}},
            {{"group_size", get("group_size") * 2}}};
  }

  std::vector<nlohmann::json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    const int width = vector_width(in.problem);
    const int64_t units = (in.problem.k + width - 1) / width;
    for (int64_t group : {4, 8, 16, 32}) {
      if (group > 2 * pow2_at_least(units) && group > 4) continue;  // most lanes would idle
      for (int64_t per : {1, 2, 4})
        for (int64_t threads : {128, 256})
          space.push_back({{"vector_width", width}, {"group_size", group}, {"nnz_per_group", std::min(per, group)},
                           {"threads_per_block", threads}});
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget&) const override {
    return {coo_flat_spec(d, problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const cuda::Kernel kernel = load_kernel(p.rt, d, coo_flat_spec(d, p.problem.dtype));
    const int threads = d.params.at("threads_per_block").template get<int>();
    const int64_t per_group = d.params.at("nnz_per_group").template get<int64_t>();
    const int64_t groups = (p.s.nnz() + per_group - 1) / per_group;
    Launch launch{kernel, {ops::blocks_for(groups * d.params.at("group_size").template get<int64_t>(), threads), 1, 1},
                  {unsigned(threads), 1, 1}};
    auto coo_rows = p.s.template get_or_create<DeviceBuffer>("coo_rows", [&] {
      return std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(p.rt.context, formats::coo_row_indices(p.s.host_pattern())));
    });
    return std::make_unique<CooFlatExecution<T>>(std::move(launch), std::move(coo_rows));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, coo_flat, sparsejit::variants::sddmm::CooFlat)
