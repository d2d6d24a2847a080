// row_gather: a lane group per row chunk (formats/sddmm_row_chunks.hpp: a row, or max_nnz
// nonzeros of a long one): A's row loaded once into registers, the chunk's B rows gathered.
#include <algorithm>

#include "formats/sddmm_row_chunks.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "variants/sddmm/gather.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

// B vectors a lane keeps in flight (unroll * lane_vectors) in the default unroll.
constexpr int64_t kRowLoadsInFlight = 16;

// formats/sddmm_row_chunks.hpp in device memory, cached on the handle per max_nnz.
struct DeviceRowChunks {
  DeviceBuffer row, ptr;
  int64_t chunks = 0;
};

jit::KernelSpec row_gather_spec(const Decision& d, DType dtype, int32_t k) {
  return gather_spec(d, dtype, k, "sddmm_row.cu", "sj_sddmm_row");
}

template <class T>
class RowGatherExecution final : public SddmmExecution<T> {
 public:
  RowGatherExecution(Launch launch, std::shared_ptr<const DeviceRowChunks> chunks)
      : launch_(std::move(launch)), chunks_(std::move(chunks)) {}
  void run(detail::RuntimeState&, const SddmmOperands<T>& o) override {
    long long chunks = chunks_->chunks;
    int k = o.a.cols();
    CUdeviceptr chunk_row = chunks_->row.ptr(), chunk_ptr = chunks_->ptr.ptr();
    CUdeviceptr cols = o.s.col_idx().ptr(), sv = o.s.values().ptr(), ap = o.a.buffer().ptr(), bp = o.b.buffer().ptr();
    CUdeviceptr pp = o.p.ptr();
    long long lda = o.a.ld(), ldb = o.b.ld();
    void* args[] = {&chunks, &k, &chunk_row, &chunk_ptr, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
    launch_(args, o.stream, o.early);
  }
  bool launches_only() const override { return true; }

 private:
  Launch launch_;
  std::shared_ptr<const DeviceRowChunks> chunks_;
};

}  // namespace

class RowGather final : public SddmmVariantOf<RowGather> {
 public:
  RowGather()
      : SddmmVariantOf("row_gather", 20,
                       "a lane group per row chunk: A's row loaded once, the chunk's B rows gathered") {}

  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = SddmmVariant::rejected(in);
    return why.empty() ? lane_vectors_rejection(in.problem) : why;
  }

  // The fewest lanes (4 to 32) whose vectors cover K in one pass, about kRowLoadsInFlight B
  // vectors in flight per lane.
  nlohmann::json defaults(const SddmmPlanInputs& in) const override {
    const int64_t units = (in.problem.k + vector_width(in.problem) - 1) / vector_width(in.problem);
    return gather_defaults(in.problem, in.model, name, std::clamp<int64_t>(pow2_at_least(units), 4, 32), kRowLoadsInFlight);
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    check_vector_width(params, problem, name);
    check_row_gather(params, problem, name);
  }

  nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json& params) const override {
    const Features& f = in.features;
    const double vb = double(size_of(in.problem.dtype));
    const double nnz = double(f.basic.nnz), rows = double(f.basic.rows), k = double(in.problem.k);
    // One A row slice per chunk: about one per row, plus one per max_nnz nonzeros of long rows.
    const double chunks = std::min(nnz, rows - double(f.basic.empty_rows) + nnz / params.at("max_nnz").get<double>());
    return {{"launch", 1.0},
            {"sparse_bytes", nnz * (4.0 + 2.0 * vb) + chunks * 8.0},
            {"gather_bytes", (nnz + chunks) * k * vb}};
  }

  // Half and twice the group, a quarter and four times the nonzeros per chunk.
  std::vector<nlohmann::json> neighbour_changes(const plan::SddmmProblem&, const plan::DeviceTarget&,
                                                const nlohmann::json& params) const override {
    std::vector<nlohmann::json> changes = group_changes(params);
    const int64_t max_nnz = params.at("max_nnz").get<int64_t>();
    changes.push_back({{"max_nnz", max_nnz / 4}});
    changes.push_back({{"max_nnz", max_nnz * 4}});
    return changes;
  }

  std::vector<nlohmann::json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    const int width = vector_width(in.problem);
    const int64_t units = (in.problem.k + width - 1) / width;
    for (int64_t group : {4, 8, 16, 32}) {
      if (group > 2 * pow2_at_least(units) && group > 4) continue;  // most lanes would idle
      for (int64_t unroll : {2, 4, 8}) {
        if (unroll > group) continue;
        for (int64_t max_nnz : {16, 64, 256})
          space.push_back({{"vector_width", width}, {"group_size", group}, {"unroll", unroll}, {"max_nnz", max_nnz},
                           {"threads_per_block", 256}});
      }
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget&) const override {
    return {row_gather_spec(d, problem.dtype, problem.k)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const cuda::Kernel kernel = load_kernel(p.rt, d, row_gather_spec(d, p.problem.dtype, p.problem.k));
    const int32_t max_nnz = d.params.at("max_nnz").template get<int32_t>();
    auto chunks = p.s.template get_or_create<DeviceRowChunks>("sddmm_row_chunks:" + std::to_string(max_nnz), [&] {
      const formats::RowChunks host = formats::build_row_chunks(p.s.host_pattern(), max_nnz);
      auto out = std::make_shared<DeviceRowChunks>();
      out->row = DeviceBuffer::from_host(p.rt.context, host.row);
      out->ptr = DeviceBuffer::from_host(p.rt.context, host.ptr);
      out->chunks = host.chunks();
      return out;
    });
    const int64_t threads = d.params.at("threads_per_block").template get<int64_t>();
    Launch launch{kernel, {ops::blocks_for(chunks->chunks * d.params.at("group_size").template get<int64_t>(), threads), 1, 1},
                  {unsigned(threads), 1, 1}};
    return std::make_unique<RowGatherExecution<T>>(std::move(launch), std::move(chunks));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, row_gather, sparsejit::variants::sddmm::RowGather)
