// One soak iteration: the mix it draws from, and each op run on fresh random operands with its
// output poisoned (NaN bytes, so an element no kernel wrote fails the check) and compared with
// the CPU reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "cli/soak.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "variants/catalog.hpp"

namespace sparsejit::cli::soak {

namespace {

// The mix. Sizes are moderate (a few thousand rows, K up to 256, dense SpAMM operands up to
// 384²) so a call takes about a millisecond on the device and its CPU reference a few, and
// every call can be checked; the shapes cover uniform, banded, power-law, clustered and
// block-diagonal patterns and one rectangular one, K odd and even.
const std::vector<std::string> kSparseShapes = {"uniform:4096:16",          "rect:4096:2048:12",  "band:4096:24:64",
                                                "rmat:4096:40000",          "clustered:4096:32:0.5:16",
                                                "blockdiag:4096:64:4"};
// SpGEMM squares a matrix (A·A, or A·Aᵀ): square shapes whose products stay small.
const std::vector<std::string> kSquareShapes = {"uniform:2048:8", "band:4096:8:32", "rmat:2048:12000", "blockdiag:2048:32:2",
                                                "clustered:2048:16:0.5:8"};
const std::vector<int32_t> kWidths = {1, 16, 33, 64, 128, 256};
const std::vector<std::string> kDecays = {"algebraic", "exponential"};
const std::vector<int32_t> kDecaySizes = {192, 256, 320, 384};
const std::vector<int32_t> kTiles = {32, 64};
const std::vector<double> kKeepShares = {0.1, 0.3, 1.0};
const std::vector<SpammPrecision> kPrecisions = {SpammPrecision::Full, SpammPrecision::TF32, SpammPrecision::FP16,
                                                 SpammPrecision::BF16};

template <class V>
const V& pick(std::mt19937_64& rng, const std::vector<V>& options) {
  return options[std::uniform_int_distribution<std::size_t>(0, options.size() - 1)(rng)];
}

bool chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// The GPU suites' bounds against the double-accumulating reference (tests/support/gpu_suite.hpp
// gpu_tolerance; SpAMM's by precision as tests/gpu/spamm_test.cpp holds them).
template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}
template <class T>
double spamm_tolerance(SpammPrecision precision) {
  switch (precision) {
    case SpammPrecision::Full: return tolerance<T>() * 10;
    case SpammPrecision::TF32:
    case SpammPrecision::FP16: return 2e-3;
    case SpammPrecision::BF16: return 1.5e-2;
  }
  return 0;
}

void expect_close(const char* what, double error, double limit) {
  if (error <= limit) return;  // a NaN (a poisoned element) fails too
  char message[160];
  std::snprintf(message, sizeof message, "%s: relative error %.3g against the CPU reference, over %.3g", what, error, limit);
  throw Mismatch(message);
}

template <class T>
Dense<T> random_dense(int32_t rows, int32_t cols, uint64_t seed) {
  Dense<T> d(rows, cols);
  generate::fill_random(d, seed);
  return d;
}

// One problem's runtimes, stream and options: the first call runs on runtimes[p.runtime], the
// second (p.again) on runtimes[p.second_runtime]. Every runtime is on GPU 0, so the handles
// and the stream, made in its context, serve both.
struct Call {
  const std::vector<Runtime*>& runtimes;
  const Problem& p;
  const Stream& stream;

  Runtime& runtime(int round) const { return *runtimes[std::size_t(round == 0 ? p.runtime : p.second_runtime)]; }
  const Context& context() const { return runtimes[0]->context(); }
  int rounds() const { return p.again ? 2 : 1; }
  Options options() const {
    Options o;
    o.stream = stream.handle();
    o.transpose_a = p.op == Op::SpMM && p.transpose;
    o.transpose_b = p.op == Op::SpGEMM && p.transpose;
    return o;
  }
};

template <class T>
int spmm(const Call& call) {
  Csr<T> a = cast<T>(generate::from_spec(call.p.shape, call.p.seed));
  const int32_t inner = call.p.transpose ? a.rows : a.cols, outer = call.p.transpose ? a.cols : a.rows;
  Dense<T> b = random_dense<T>(inner, call.p.k, call.p.seed + 1);
  DeviceCsr<T> da(call.context(), a);
  DeviceDense<T> db(call.context(), b), dc(call.context(), outer, call.p.k);
  for (int round = 0; round < call.rounds(); ++round) {
    if (round > 0) {  // new values, same handles
      generate::fill_random(a.values, call.p.seed + 2);
      da.update_values(a.values);
      generate::fill_random(b, call.p.seed + 3);
      db.upload(b);
    }
    dc.buffer().fill_bytes(0xFF);
    call.runtime(round).spmm(da, db, dc, call.options());
    call.stream.synchronize();
    Dense<T> want;
    reference::spmm(a, b, want, call.p.transpose);
    expect_close("spmm", reference::relative_error(dc.download().data, want.data), tolerance<T>());
  }
  return call.rounds();
}

template <class T>
int sddmm(const Call& call) {
  Csr<T> s = cast<T>(generate::from_spec(call.p.shape, call.p.seed));
  Dense<T> a = random_dense<T>(s.rows, call.p.k, call.p.seed + 1), b = random_dense<T>(s.cols, call.p.k, call.p.seed + 2);
  DeviceCsr<T> ds(call.context(), s);
  DeviceDense<T> da(call.context(), a), db(call.context(), b);
  DeviceBuffer dp(call.context(), s.values.size() * sizeof(T));
  for (int round = 0; round < call.rounds(); ++round) {
    if (round > 0) {
      generate::fill_random(s.values, call.p.seed + 3);
      ds.update_values(s.values);
      generate::fill_random(a, call.p.seed + 4);
      da.upload(a);
    }
    dp.fill_bytes(0xFF);
    call.runtime(round).sddmm(ds, da, db, dp, call.options());
    call.stream.synchronize();
    Csr<T> want;
    reference::sddmm(s, a, b, want);
    expect_close("sddmm", reference::relative_error(dp.download_as<T>(s.values.size()), want.values), tolerance<T>());
  }
  return call.rounds();
}

template <class T>
void expect_product(const Csr<T>& got, const Csr<T>& want) {
  if (got.rows != want.rows || got.cols != want.cols || got.row_ptr != want.row_ptr || got.col_idx != want.col_idx)
    throw Mismatch("spgemm: C's pattern (" + std::to_string(got.nnz()) + " entries) differs from the reference's (" +
                   std::to_string(want.nnz()) + ")");
  expect_close("spgemm", reference::relative_error(got.values, want.values), tolerance<T>());
}

// C = A·A (or A·Aᵀ), then, with again, the numeric phase alone for new values of A.
template <class T>
int spgemm(const Call& call) {
  Csr<T> a = cast<T>(generate::from_spec(call.p.shape, call.p.seed));
  DeviceCsr<T> da(call.context(), a);
  DeviceCsr<T> c = call.runtime(0).spgemm(da, da, call.options());
  expect_product(c.download(), reference::spgemm(a, call.p.transpose ? transpose(a) : a));
  if (!call.p.again) return 1;
  generate::fill_random(a.values, call.p.seed + 1);
  da.update_values(a.values);
  call.runtime(1).spgemm_numeric(da, da, c, call.options());
  call.stream.synchronize();
  expect_product(c.download(), reference::spgemm(a, call.p.transpose ? transpose(a) : a));
  return 2;
}

// A τ that keeps about `share` of the tile products (1: τ = 0, all of them), placed in the
// geometric middle of a gap between two distinct norm products: the device sums the norms in
// another order, and a τ on a product could keep on the device what the reference skips.
double tau_keeping(const NormMap& a, const NormMap& b, double share) {
  if (share >= 1) return 0;
  std::vector<double> products;
  for (int32_t i = 0; i < a.tile_rows; ++i)
    for (int32_t k = 0; k < a.tile_cols; ++k)
      for (int32_t j = 0; j < b.tile_cols; ++j) products.push_back(a.at(i, k) * b.at(k, j));
  std::sort(products.begin(), products.end());
  for (auto i = std::size_t(double(products.size()) * (1 - share)); i + 1 < products.size(); ++i)
    if (products[i + 1] > products[i] * (1 + 1e-6)) return std::sqrt(products[i] * products[i + 1]);
  return 0;
}

// N×N decay with random signs: "algebraic:N" (0.1/(|i-j|^0.1+1)) or "exponential:N" (0.97^|i-j|).
template <class T>
Dense<T> decay(const std::string& shape, uint64_t seed) {
  const auto colon = shape.find(':');
  const int32_t n = std::stoi(shape.substr(colon + 1));
  const auto signs = generate::DecaySigns::Random;
  return cast<T>(shape.compare(0, colon, "algebraic") == 0 ? generate::algebraic_decay(n, n, 0.1, 0.1, signs, seed)
                                                            : generate::exponential_decay(n, n, 1.0, 0.97, signs, seed));
}

// C ≈ A·B at a τ keeping keep_share of the tile products, against reference::spamm at the same
// τ (the cuBLAS variant skips nothing: against the whole product).
template <class T>
int spamm(const Call& call) {
  Dense<T> a = decay<T>(call.p.shape, call.p.seed), b = decay<T>(call.p.shape, call.p.seed + 1);
  DeviceDense<T> da(call.context(), a), db(call.context(), b), dc(call.context(), a.rows, b.cols);
  SpammOptions o;
  o.stream = call.stream.handle();
  o.tile = call.p.tile;
  o.precision = call.p.precision;
  for (int round = 0; round < call.rounds(); ++round) {
    if (round > 0) {
      a = decay<T>(call.p.shape, call.p.seed + 2);
      b = decay<T>(call.p.shape, call.p.seed + 3);
      da.upload(a);
      db.upload(b);
    }
    o.tau = tau_keeping(tile_norms(a, o.tile), tile_norms(b, o.tile), call.p.keep_share);
    dc.buffer().fill_bytes(0xFF);
    const SpammInfo info = call.runtime(round).spamm(da, db, dc, o);
    call.stream.synchronize();
    const bool whole_product = info.decision->variant == variants::vendor_variant(Op::SpAMM);
    Dense<T> want;
    reference::spamm(a, b, want, info.tile, whole_product ? 0.0 : info.tau);
    expect_close("spamm", reference::relative_error(dc.download().data, want.data), spamm_tolerance<T>(o.precision));
  }
  return call.rounds();
}

template <class T>
int run_as(const Call& call) {
  switch (call.p.op) {
    case Op::SpMM: return spmm<T>(call);
    case Op::SDDMM: return sddmm<T>(call);
    case Op::SpGEMM: return spgemm<T>(call);
    case Op::SpAMM: return spamm<T>(call);
  }
  return 0;
}

}  // namespace

std::string describe(const Problem& p) {
  std::string text = std::string(to_string(p.op)) + " " + to_string(p.dtype) + " " + p.shape;
  if (p.op == Op::SpMM || p.op == Op::SDDMM) text += " k=" + std::to_string(p.k);
  if (p.transpose) text += p.op == Op::SpMM ? " Aᵀ·B" : " A·Aᵀ";
  if (p.op == Op::SpAMM)
    text += " tile=" + std::to_string(p.tile) + " keep=" + std::to_string(p.keep_share) + " " + to_string(p.precision);
  text += " on runtime " + std::to_string(p.runtime);
  if (p.again) text += ", again on runtime " + std::to_string(p.second_runtime);
  return text + " seed=" + std::to_string(p.seed);
}

Problem draw_problem(std::mt19937_64& rng, int runtimes) {
  Problem p;
  p.op = pick(rng, std::vector<Op>{Op::SpMM, Op::SDDMM, Op::SpGEMM, Op::SpAMM});
  p.dtype = chance(rng, 0.5) ? DType::F32 : DType::F64;
  std::uniform_int_distribution<int> runtime(0, runtimes - 1);
  p.runtime = runtime(rng);
  p.again = chance(rng, 0.5);
  p.second_runtime = runtime(rng);
  p.seed = rng();
  if (p.op == Op::SpAMM) {
    p.shape = pick(rng, kDecays) + ":" + std::to_string(pick(rng, kDecaySizes));
    p.tile = pick(rng, kTiles);
    p.keep_share = pick(rng, kKeepShares);
    p.precision = p.dtype == DType::F32 ? pick(rng, kPrecisions) : SpammPrecision::Full;  // reduced precisions: f32 only
    return p;
  }
  p.shape = pick(rng, p.op == Op::SpGEMM ? kSquareShapes : kSparseShapes);
  if (p.op != Op::SpGEMM) p.k = pick(rng, kWidths);
  p.transpose = p.op != Op::SDDMM && chance(rng, 0.25);  // SDDMM has no transposed form
  return p;
}

int run_checked(const std::vector<Runtime*>& runtimes, const Problem& problem, const Stream& stream) {
  const Call call{runtimes, problem, stream};
  return problem.dtype == DType::F32 ? run_as<float>(call) : run_as<double>(call);
}

}  // namespace sparsejit::cli::soak
