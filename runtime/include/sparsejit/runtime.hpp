// The sparsejit runtime: one object per GPU that plans, compiles (NVRTC, cached in SQLite)
// and launches sparse products. Thread-safe: any thread may call any method; calls on one
// stream run in call order.
//
//   sparsejit::Runtime rt;                                  // device 0
//   sparsejit::DeviceCsr<float> a(rt.context(), host_a);    // uploaded once; caches attach here
//   sparsejit::DeviceDense<float> b(rt.context(), host_b), c(rt.context(), m, k);
//   sparsejit::CallInfo call = rt.spmm(a, b, c);            // auto: planned on the first call
//   std::cout << sparsejit::describe(*call.decision);
//
// What a call caches on the matrix handle (valid for the handle's life: its pattern never
// changes): the features, and one prepared plan per (op, value type, K, transpose, forced
// choice, runtime). A repeated call with the same arguments looks the plan up and launches.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "sparsejit/decision.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/options.hpp"
#include "sparsejit/spamm.hpp"
#include "sparsejit/spread.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit {

namespace detail { struct RuntimeState; }

class Runtime {
 public:
  // Uses GPU `device`; throws UnsupportedError without a driver or GPU.
  explicit Runtime(int device = 0);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Context& context() const;
  const DeviceInfo& device() const;
  // How many times this runtime has timed a shortlist (measured selection, see Options::reuse):
  // a plan taken from earlier times (source measured with measure_ms 0, or recorded) adds none.
  int64_t shortlists_timed() const;

  // C = A·B (A m×n, B n×k, C m×k), or C = Aᵀ·B with options.transpose_a (B m×k, C n×k).
  // C is overwritten. T: float or double (others: UnsupportedError).
  // Non-finite values in B: the sparse variants read only the rows of B that A's entries
  // name; the dense variant (cuBLAS over a copy of A, zeros included; chosen for near-dense
  // A) multiplies every row, so an Inf or NaN in B reaches C through A's zeros (0·Inf = NaN).
  // Force a sparse variant (options.variant) when B may hold them.
  template <class T>
  CallInfo spmm(const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const Options& options = {});

  // P = S ∘ (A·Bᵀ): A m×k and B n×k row-major, S m×n; p receives nnz(S) values in S's
  // order (p_e = s_e · dot(A[row_e], B[col_e])). T: float or double.
  template <class T>
  CallInfo sddmm(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceBuffer& p,
                 const Options& options = {});

  // C = A·B with A m×k and B k×n sparse: a new m×n DeviceCsr with the columns of every row
  // sorted. C holds every column the patterns produce (the structural product, as
  // reference::spgemm): an entry whose products cancel to zero is kept as an explicit zero,
  // and duplicate entries of A or B add up. T: float or double; the products accumulate in
  // T (f32 in f32; the variants' summation order differs from the reference's and between
  // runs, so f32 results agree with it to f32 rounding). Rows of A and B need not be sorted.
  // Work is enqueued on options.stream; the call synchronizes that stream once, to learn
  // NNZ(C) before allocating C, and returns with the rest enqueued: C's arrays are complete in
  // stream order (C.host_pattern() and C.download() wait for them). A or B without entries,
  // or no products at all, give an m×n C without entries.
  // Errors (before anything is allocated): InvalidInputError naming the shapes when A's
  // columns are not B's rows, and naming the count when A·B has more than 2^31-1 scalar
  // products (NNZ(Ĉ): C's int32 offsets could not be guaranteed to address it);
  // UnsupportedError for other value types. Options::transpose_a / transpose_b multiply Aᵀ / Bᵀ
  // instead (A·Aᵀ is spgemm(a, a) with transpose_b, Aᵀ·A with transpose_a): the transpose is
  // made on the device by cuSPARSE on the first such call and kept on the operand's handle (its
  // values converted again after update_values), at the cost of one synchronization of
  // options.stream when it is made or refreshed. Options::variant and params force a variant
  // ("row_hash", "cusparse"); reuse and measure do not apply yet.
  // info, when given, receives the call's Decision and whether the plan was reused.
  template <class T>
  DeviceCsr<T> spgemm(const DeviceCsr<T>& a, const DeviceCsr<T>& b, const Options& options = {}, CallInfo* info = nullptr);

  // The numeric phase alone, for callers that multiply the same patterns again with new values
  // (iterative solvers, AMG setup): c's values become A·B's for the current values of A and B
  // (after update_values), c's pattern kept. c must come from spgemm(A', B') with A' and B'
  // of A's and B's patterns (InvalidInputError otherwise, naming which). The first such call
  // on c finds every product's place in c (2 bytes a product, 4 for rows of more than 65536
  // entries, plus 4 per entry of A; kept on c's handle for its life) and synchronizes
  // options.stream once; later calls run one kernel that gathers, multiplies and adds (plus
  // one that clears the rows of C split over blocks, and one for rows wider than a block's
  // 32 KiB of sums, where there are such rows): no pattern pass, no synchronization, no
  // allocation. Where those bytes pass half the free device memory or
  // Options::memory_limit_bytes, or Options::keep_positions is off, every call runs spgemm's
  // plan again instead (its numeric pass, without allocating C). Work is enqueued on options.stream, and c's values are being
  // rewritten until it completes. Returns the Decision, whether the plan was reused and, in
  // NumericCallInfo::numeric, which of the two ran and why.
  template <class T>
  NumericCallInfo spgemm_numeric(const DeviceCsr<T>& a, const DeviceCsr<T>& b, DeviceCsr<T>& c, const Options& options = {});

  // SpAMM C ≈ A·B (sparsejit/spamm.hpp): A m×k, B k×n, C m×n, all row-major (any ld ≥ cols);
  // C is overwritten. T: float or double (double: precision Full only). One call: the tile
  // norms of A and B (one pass over each), τ (given, or searched for on the device), the kept
  // share and the error bound read back (the call synchronizes options.stream once, more during
  // a τ search), the plan (SpAMM kernels below the model's crossover share, cuBLAS of the same
  // precision above it), the launches. Errors before anything is allocated or written:
  // InvalidInputError naming the shapes or the bad option value; UnsupportedError for other
  // value types, or a reduced precision with double. Returns τ, the kept share, the bound and
  // the Decision.
  template <class T>
  SpammInfo spamm(const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const SpammOptions& options = {});
  // fp16 or bf16 operands as the caller holds them (what a 16-bit GEMM takes): no conversion
  // pass; the products accumulate in f32 into an f32 C. precision is the operands' own (fp16
  // for half, bf16 for bfloat16; Full means it too), another is an UnsupportedError. The
  // operands are read in place when k, n and both leading dimensions are multiples of 8, else
  // through padded copies the norm pass writes.
  SpammInfo spamm(const DeviceDense<half>& a, const DeviceDense<half>& b, DeviceDense<float>& c, const SpammOptions& options = {});
  SpammInfo spamm(const DeviceDense<bfloat16>& a, const DeviceDense<bfloat16>& b, DeviceDense<float>& c,
                  const SpammOptions& options = {});

  // SpAMM over several GPUs with the operands already on each (sparsejit/spread.hpp): a and b
  // replicated on the same GPUs, this runtime's first; nothing is sent. Each GPU multiplies
  // its block of C's tile rows from its own copies (blocks cut as for SpammOptions::devices,
  // which must be empty or name the same GPUs) and keeps it: c becomes distributed, its parts
  // reused where a block keeps its rows, else allocated anew. The call synchronizes
  // options.stream once (rank 0's norms and τ) and returns with every GPU's work enqueued and
  // options.stream waiting for it. Errors as the one-GPU call's, and InvalidInputError naming
  // what does not fit (operands not replicated or on other GPUs). T: float or double.
  template <class T>
  SpammInfo spamm(const SpreadDense<T>& a, const SpreadDense<T>& b, SpreadDense<T>& c, const SpammOptions& options = {});
  SpammInfo spamm(const SpreadDense<half>& a, const SpreadDense<half>& b, SpreadDense<float>& c, const SpammOptions& options = {});
  SpammInfo spamm(const SpreadDense<bfloat16>& a, const SpreadDense<bfloat16>& b, SpreadDense<float>& c,
                  const SpammOptions& options = {});
  // x (on this runtime's GPU) copied to every GPU of `devices` ({-1}: all visible; the list
  // must hold this runtime's GPU, which becomes rank 0) by one NCCL broadcast, enqueued on
  // `stream`, which waits for every copy. Part 0 is x itself, borrowed: keep x alive, and
  // replicate again after changing it. T: float, double, half or bfloat16.
  template <class T>
  SpreadDense<T> replicate(const DeviceDense<T>& x, const std::vector<int>& devices, void* stream = nullptr);
  // The rows of a spread x (distributed blocks, or a replicated copy) copied into `into`
  // (x.rows × x.cols, any ld, on this runtime's GPU, rank 0 of x) through NCCL, enqueued on
  // `stream`. InvalidInputError naming the shapes or blocks that do not fit.
  template <class T>
  void gather(const SpreadDense<T>& x, DeviceDense<T>& into, void* stream = nullptr);

 private:
  std::shared_ptr<detail::RuntimeState> state_;
};

// Plan (and compile, when the chosen variant is one of ours) without running anything and
// without needing a GPU: the plan is for GPU `device` when one exists, else for a nominal
// sm_90 part. This is what `sparsejit explain` prints.
Decision explain_spmm(PatternView a, int32_t k, DType dtype, const Options& options = {}, int device = 0);
Decision explain_sddmm(PatternView s, int32_t k, DType dtype, const Options& options = {}, int device = 0);
// SpGEMM C = A·B (the patterns of A and B).
Decision explain_spgemm(PatternView a, PatternView b, DType dtype, const Options& options = {}, int device = 0);
// SpAMM C ≈ A·B on host matrices: the norms, τ, kept share and bound computed on the CPU
// (what the device computes), then the same planner and compiles; info, when given, receives
// them. T: float or double.
template <class T>
Decision explain_spamm(const Dense<T>& a, const Dense<T>& b, const SpammOptions& options = {}, SpammInfo* info = nullptr,
                       int device = 0);

}  // namespace sparsejit
