// SpGEMM on the device: every variant (and auto, and row_hash with small shared bins so its
// global-memory tables run on small inputs) against reference::spgemm on fresh random values,
// f32 and f64: power-law (R-MAT), banded and uniform A·A, empty rows and columns, a row with
// thousands of products, rectangular A·B, unsorted rows with duplicates. C's new arrays are
// poisoned before the kernels write them (variants::set_poison_outputs), so the pattern must
// equal the reference's exactly and the values agree to rounding. Also: the plan is reused,
// new values are followed, C feeds another op, empty operands, a caller's stream, errors, and
// memory limits (row panels, cuSPARSE's lower-memory algorithms, a limit too small); the
// numeric phase alone by positions (rows grouped, split, wider than shared memory) and by the
// plan's variant again.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/memory.hpp"
#include "cuda/scratch_pool.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/io.hpp"
#include "support/gpu_suite.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit {
namespace {

using test::GpuSuite;

class SpgemmGpu : public GpuSuite {
 protected:
  void SetUp() override {
    GpuSuite::SetUp();
    variants::set_poison_outputs(true);
  }
  void TearDown() override { variants::set_poison_outputs(false); }
};

template <class T>
Csr<T> with_values(const Csr<double>& pattern, uint64_t seed) {
  Csr<T> m = cast<T>(pattern);
  generate::fill_random(m.values, seed);
  return m;
}

// The options of every way the tests run a product: auto, each variant, row_hash with the
// largest shared bin at 16 and 256 products (longer rows in global-memory tables), without the
// dense bin, and with a dense span of 64 columns (long rows of wider spans stay hashed).
std::vector<Options> every_variant() {
  std::vector<Options> all(1);
  for (const std::string& v : plan::spgemm_variants()) {
    Options o;
    o.variant = v;
    all.push_back(o);
  }
  for (int limit : {16, 256}) {
    Options o;
    o.variant = "row_hash";
    o.params = {{"max_shared_row", limit}, {"global_blocks", 7}};
    all.push_back(o);
  }
  for (int span : {0, 64}) {
    Options o;
    o.variant = "row_hash";
    o.params = {{"dense_span", span}};
    all.push_back(o);
  }
  Options windows;  // dense rows of up to 8192 columns summed 2048 at a time
  windows.variant = "row_hash";
  windows.params = {{"dense_span", 8192}, {"dense_window", 2048}};
  all.push_back(windows);
  // cuSPARSE's lower-memory algorithms, which alg 0 takes when ALG1's buffers do not fit.
  for (int alg : {2, 3}) {
    Options o;
    o.variant = "cusparse";
    o.params = {{"alg", alg}};
    all.push_back(o);
  }
  return all;
}

std::string label(const Options& o) { return (o.variant.empty() ? std::string("auto") : o.variant) + o.params.dump(); }

template <class T>
void expect_same_product(const Csr<T>& got, const Csr<T>& want) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  ASSERT_EQ(got.row_ptr, want.row_ptr);
  ASSERT_EQ(got.col_idx, want.col_idx);
  EXPECT_LE(test::relative_error(test::as_double(got.values), test::as_double(want.values)), test::gpu_tolerance<T>());
}

// C = A·B with `options` on fresh values of the patterns, against the reference.
template <class T>
void check_product(Runtime& rt, const std::string& name, const Csr<double>& a_pattern, const Csr<double>& b_pattern,
                   const Options& options, uint64_t seed) {
  SCOPED_TRACE(name + " " + std::string(to_string(dtype_of<T>::value)) + " " + label(options) + " seed=" + std::to_string(seed));
  const Csr<T> a = with_values<T>(a_pattern, seed);
  const Csr<T> b = with_values<T>(b_pattern, seed + 1);
  const Csr<T> want = reference::spgemm(a, b);
  const DeviceCsr<T> da(rt.context(), a), db(rt.context(), b);
  CallInfo info;
  const DeviceCsr<T> c = rt.spgemm(da, db, options, &info);
  ASSERT_TRUE(info.decision);
  if (!options.variant.empty()) {
    EXPECT_EQ(info.decision->variant, options.variant);
  }
  EXPECT_EQ(c.rows(), a.rows);
  EXPECT_EQ(c.cols(), b.cols);
  EXPECT_EQ(c.nnz(), want.nnz());
  expect_same_product(c.download(), want);
}

template <class T>
void check_every_variant(Runtime& rt, const std::string& name, const Csr<double>& a, const Csr<double>& b, uint64_t seed) {
  for (const Options& o : every_variant()) {
    if (o.variant == "cusparse" && !spgemm_features(a.pattern(), b.pattern()).a_sorted) continue;  // rejected: unsorted
    check_product<T>(rt, name, a, b, o, seed);
  }
}

// Removes every entry of every `step`-th column: truly empty columns.
Csr<double> empty_columns(const Csr<double>& m, int32_t step) {
  Csr<double> out;
  out.rows = m.rows;
  out.cols = m.cols;
  for (int32_t r = 0; r < m.rows; ++r) {
    for (int32_t e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) {
      if (m.col_idx[e] % step == 0) continue;
      out.col_idx.push_back(m.col_idx[e]);
      out.values.push_back(m.values[e]);
    }
    out.row_ptr.push_back(int32_t(out.col_idx.size()));
  }
  return out;
}

// uniform rows x cols with `per_row` entries, row 0 replaced by `long_row` consecutive columns.
Csr<double> with_long_first_row(int32_t rows, int32_t cols, int32_t per_row, int32_t long_row, uint64_t seed) {
  const Csr<double> base = generate::uniform(rows, cols, per_row, seed);
  Csr<double> out;
  out.rows = rows;
  out.cols = cols;
  for (int32_t c = 0; c < long_row; ++c) {
    out.col_idx.push_back(c);
    out.values.push_back(0.5);
  }
  out.row_ptr.push_back(long_row);
  for (int32_t r = 1; r < rows; ++r) {
    for (int32_t e = base.row_ptr[r]; e < base.row_ptr[r + 1]; ++e) {
      out.col_idx.push_back(base.col_idx[e]);
      out.values.push_back(base.values[e]);
    }
    out.row_ptr.push_back(int32_t(out.col_idx.size()));
  }
  return out;
}

// Every pair of patterns the product tests run: check(name, a, b) on R-MAT, banded and
// uniform squares, empty rows and columns, a row of 12000 products, and a rectangular pair.
template <class Check>
void for_every_shape(uint64_t seed, Check check) {
  const Csr<double> rmat = generate::from_spec("rmat:4096:40000", seed);
  check("rmat A·A", rmat, rmat);
  const Csr<double> band = generate::from_spec("band:3000:12:40", seed);
  check("band A·A", band, band);
  const Csr<double> uniform = generate::from_spec("uniform:2500:8", seed);
  check("uniform A·A", uniform, uniform);
  const Csr<double> holes = empty_columns(test::empty_every(generate::from_spec("uniform:900:10", seed), 3), 4);
  check("empty rows and columns", holes, holes);
  // Row 0: 1500 entries times B rows of 8 = 12000 products over 5000 columns (a global table
  // at the default bins); the other rows 48.
  const Csr<double> long_a = with_long_first_row(300, 2000, 6, 1500, seed);
  const Csr<double> wide_b = generate::uniform(2000, 5000, 8, seed + 5);
  check("a row of 12000 products", long_a, wide_b);
  const Csr<double> rect_a = generate::uniform(700, 1300, 9, seed);
  const Csr<double> rect_b = generate::uniform(1300, 450, 5, seed + 7);
  check("rectangular 700x1300 · 1300x450", rect_a, rect_b);
  // Dense 12 x 12 blocks, cutting across the 8 x 8 tiles, with scattered entries beside them
  // (bitmap_tc's full and partial tiles), 1001 rows: a partial last tile row.
  const Csr<double> blocks = generate::from_spec("blockdiag:1001:12:2", seed);
  check("dense 12x12 blocks", blocks, blocks);
}

template <class T>
void every_shape(Runtime& rt, uint64_t seed) {
  for_every_shape(seed, [&](const std::string& name, const Csr<double>& a, const Csr<double>& b) {
    check_every_variant<T>(rt, name, a, b, seed);
  });
}

TEST_F(SpgemmGpu, EveryVariantAndShapeF32) { every_shape<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, EveryVariantAndShapeF64) { every_shape<double>(rt(), next_seed()); }

// Unsorted rows with a duplicate column: row_hash takes any order and adds the duplicates.
TEST_F(SpgemmGpu, UnsortedRowsWithDuplicatesAddUp) {
  Csr<double> a = generate::uniform(400, 400, 7, next_seed());
  for (int32_t r = 0; r < a.rows; ++r) std::reverse(a.col_idx.begin() + a.row_ptr[r], a.col_idx.begin() + a.row_ptr[r + 1]);
  a.col_idx[1] = a.col_idx[0];  // row 0 names one column twice
  Options o;
  o.variant = "row_hash";
  for (int limit : {4096, 16}) {
    o.params = {{"max_shared_row", limit}};
    check_product<float>(rt(), "unsorted", a, a, o, next_seed());
    check_product<double>(rt(), "unsorted", a, a, o, next_seed());
  }
  Options tiles;  // the duplicates share a tile slot, where packing adds them
  tiles.variant = "bitmap_tc";
  check_product<float>(rt(), "unsorted", a, a, tiles, next_seed());
  check_product<double>(rt(), "unsorted", a, a, tiles, next_seed());
  // The dense bin reads a row's span from B's row ends: refused for unsorted rows, by name.
  o.params = {{"dense_span", 64}};
  const DeviceCsr<float> da(rt().context(), cast<float>(a));
  try {
    rt().spgemm(da, da, o);
    ADD_FAILURE() << "dense_span on unsorted B accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("dense_span = 64 needs B's rows sorted"), std::string::npos) << e.what();
  }
}

// bitmap_tc at a reduced precision a caller asks for: the pattern exact, the values within the
// precision's rounding (tf32 and fp16 keep 10 stored mantissa bits, 2^-11; bf16 7, 2^-8), far
// outside f32's: the full-precision path is what keeps f32 accuracy.
TEST_F(SpgemmGpu, BitmapTcReducedPrecisionOnlyWhenAskedFor) {
  const Csr<double> pattern = generate::from_spec("blockdiag:2000:16:3", next_seed());
  const uint64_t seed = next_seed();
  const Csr<float> a = with_values<float>(pattern, seed), b = with_values<float>(pattern, seed + 1);
  const Csr<float> want = reference::spgemm(a, b);
  const DeviceCsr<float> da(rt().context(), a), db(rt().context(), b);
  for (const auto& [precision, limit] : {std::pair{"tf32", 2e-3}, std::pair{"fp16", 2e-3}, std::pair{"bf16", 2e-2}}) {
    SCOPED_TRACE(precision);
    Options o;
    o.variant = "bitmap_tc";
    o.params = {{"precision", precision}};
    CallInfo info;
    const Csr<float> got = rt().spgemm(da, db, o, &info).download();
    EXPECT_EQ(info.decision->params.at("precision"), precision);
    ASSERT_EQ(got.row_ptr, want.row_ptr);
    ASSERT_EQ(got.col_idx, want.col_idx);
    const double error = test::relative_error(test::as_double(got.values), test::as_double(want.values));
    EXPECT_LE(error, limit);
    EXPECT_GT(error, test::gpu_tolerance<float>()) << "agreed with f32 to f32 rounding: was the reduced precision used?";
  }
}

// A product that cancels: A = [1 1], B = [[1], [-1]] gives C = [0], kept as an explicit zero.
TEST_F(SpgemmGpu, CancellationKeepsAnExplicitZero) {
  Csr<double> a;
  a.rows = 1;
  a.cols = 2;
  a.row_ptr = {0, 2};
  a.col_idx = {0, 1};
  a.values = {1.0, 1.0};
  Csr<double> b;
  b.rows = 2;
  b.cols = 1;
  b.row_ptr = {0, 1, 2};
  b.col_idx = {0, 0};
  b.values = {1.0, -1.0};
  for (const Options& o : every_variant()) {
    SCOPED_TRACE(label(o));
    const DeviceCsr<double> da(rt().context(), a), db(rt().context(), b);
    const Csr<double> c = rt().spgemm(da, db, o).download();
    EXPECT_EQ(c.row_ptr, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(c.col_idx, (std::vector<int32_t>{0}));
    EXPECT_EQ(c.values, (std::vector<double>{0.0}));
  }
}

TEST_F(SpgemmGpu, ThePlanIsReusedAndNewValuesAreFollowed) {
  const Csr<double> pattern = generate::from_spec("rmat:2048:20000", next_seed());
  Csr<float> a = with_values<float>(pattern, next_seed());
  DeviceCsr<float> da(rt().context(), a);
  std::shared_ptr<const Decision> first;
  for (int round = 0; round < 3; ++round) {
    if (round > 0) {
      generate::fill_random(a.values, next_seed());
      da.update_values(a.values);
    }
    CallInfo info;
    const Csr<float> c = rt().spgemm(da, da, {}, &info).download();
    EXPECT_EQ(info.plan_reused, round > 0);
    if (round == 0) first = info.decision;
    EXPECT_EQ(info.decision, first);
    expect_same_product(c, reference::spgemm(a, a));
  }
}

// C's host pattern comes from the device on first use; C then feeds SpMM like any handle.
TEST_F(SpgemmGpu, TheProductFeedsAnotherOperation) {
  const Csr<double> pattern = generate::from_spec("band:1500:10:30", next_seed());
  const Csr<float> a = with_values<float>(pattern, next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  const DeviceCsr<float> c = rt().spgemm(da, da);
  const Csr<float> want = reference::spgemm(a, a);
  const PatternView p = c.host_pattern();
  ASSERT_EQ(p.nnz(), want.nnz());
  EXPECT_TRUE(std::equal(want.col_idx.begin(), want.col_idx.end(), p.col_idx));
  Dense<float> b(c.cols(), 32);
  generate::fill_random(b, next_seed());
  DeviceDense<float> db(rt().context(), b), dc(rt().context(), c.rows(), 32);
  dc.buffer().fill_bytes(0xFF);
  rt().spmm(c, db, dc);
  Dense<float> expected;
  reference::spmm(want, b, expected);
  EXPECT_LE(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), 1e-5);
}

TEST_F(SpgemmGpu, ACallersStreamOrdersTheWork) {
  const Csr<double> pattern = generate::from_spec("uniform:3000:9", next_seed());
  const Csr<double> a = with_values<double>(pattern, next_seed());
  const DeviceCsr<double> da(rt().context(), a);
  const Stream stream = Stream::non_blocking(rt().context());
  for (const Options& base : every_variant()) {
    Options o = base;
    o.stream = stream.handle();
    SCOPED_TRACE(label(o));
    const DeviceCsr<double> c = rt().spgemm(da, da, o);
    expect_same_product(c.download(), reference::spgemm(a, a));
  }
}

// The two-phase form: spgemm once, then spgemm_numeric for new values of A and B (C's values
// poisoned first), against the reference of the new values, with the plan reused.
template <class T>
void check_numeric_phase(Runtime& rt, const std::string& name, const Csr<double>& a_pattern, const Csr<double>& b_pattern,
                         uint64_t seed) {
  const bool square_self = &a_pattern == &b_pattern;
  for (const Options& o : every_variant()) {
    if (o.variant == "cusparse" && !spgemm_features(a_pattern.pattern(), b_pattern.pattern()).a_sorted) continue;
    SCOPED_TRACE(name + " " + std::string(to_string(dtype_of<T>::value)) + " " + label(o));
    Csr<T> a = with_values<T>(a_pattern, seed);
    Csr<T> b = square_self ? a : with_values<T>(b_pattern, seed + 1);
    DeviceCsr<T> da(rt.context(), a);
    std::optional<DeviceCsr<T>> db;
    if (!square_self) db.emplace(rt.context(), b);
    const DeviceCsr<T>& b_handle = square_self ? da : *db;
    DeviceCsr<T> c = rt.spgemm(da, b_handle, o);
    for (int round = 0; round < 2; ++round) {
      generate::fill_random(a.values, seed + 10 + uint64_t(round));
      da.update_values(a.values);
      if (square_self) {
        b = a;
      } else {
        generate::fill_random(b.values, seed + 20 + uint64_t(round));
        db->update_values(b.values);
      }
      c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
      const NumericCallInfo info = rt.spgemm_numeric(da, b_handle, c, o);
      EXPECT_TRUE(info.plan_reused);
      EXPECT_TRUE(info.numeric.rfind("positions: ", 0) == 0 || info.numeric.rfind("tiles: ", 0) == 0) << info.numeric;
      expect_same_product(c.download(), reference::spgemm(a, b));
    }
  }
}

template <class T>
void numeric_phase_shapes(Runtime& rt, uint64_t seed) {
  for_every_shape(seed, [&](const std::string& name, const Csr<double>& a, const Csr<double>& b) {
    check_numeric_phase<T>(rt, name, a, b, seed);
  });
}

TEST_F(SpgemmGpu, TheNumericPhaseFollowsNewValuesF32) { numeric_phase_shapes<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseFollowsNewValuesF64) { numeric_phase_shapes<double>(rt(), next_seed()); }

// A·Aᵀ and Aᵀ·A without the caller forming the transpose (Options::transpose_b / transpose_a),
// on a rectangular A, against the reference of the transposed host matrix; then new values of
// A (the kept transpose's values converted again) and the numeric phase on the same C.
template <class T>
void check_transposed_products(Runtime& rt, uint64_t seed) {
  Csr<T> a = with_values<T>(generate::uniform(700, 1300, 9, seed), seed + 1);
  DeviceCsr<T> da(rt.context(), a);
  for (bool transpose_a : {false, true}) {
    Options o;
    o.transpose_a = transpose_a;
    o.transpose_b = !transpose_a;
    SCOPED_TRACE(std::string(to_string(dtype_of<T>::value)) + (transpose_a ? " Aᵀ·A" : " A·Aᵀ"));
    const auto want = [&] { return transpose_a ? reference::spgemm(transpose(a), a) : reference::spgemm(a, transpose(a)); };
    DeviceCsr<T> c = rt.spgemm(da, da, o);
    EXPECT_EQ(c.rows(), transpose_a ? 1300 : 700);
    expect_same_product(c.download(), want());
    generate::fill_random(a.values, seed + (transpose_a ? 3 : 2));
    da.update_values(a.values);
    expect_same_product(rt.spgemm(da, da, o).download(), want());
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    rt.spgemm_numeric(da, da, c, o);
    expect_same_product(c.download(), want());
  }
  Options mismatched;
  mismatched.transpose_a = true;  // Aᵀ·A needs A's rows to match: 700 vs 1300 columns of Aᵀ
  const Csr<T> b = with_values<T>(generate::uniform(1300, 40, 3, seed + 4), seed + 5);
  const DeviceCsr<T> db(rt.context(), b);
  try {
    rt.spgemm(da, db, mismatched);
    ADD_FAILURE() << "Aᵀ (1300x700) times a 1300x40 B accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("Aᵀ is 1300x700 but B has 1300 rows"), std::string::npos) << e.what();
  }
}

TEST_F(SpgemmGpu, TransposedOperandsF32) { check_transposed_products<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TransposedOperandsF64) { check_transposed_products<double>(rt(), next_seed()); }

// spgemm_numeric takes only a C that spgemm made from A's and B's patterns.
TEST_F(SpgemmGpu, TheNumericPhaseRefusesAForeignC) {
  const Csr<float> a = with_values<float>(generate::from_spec("uniform:500:6", next_seed()), next_seed());
  const Csr<float> other = with_values<float>(generate::from_spec("uniform:500:6", next_seed()), next_seed());
  const DeviceCsr<float> da(rt().context(), a), dother(rt().context(), other);
  DeviceCsr<float> from_other = rt().spgemm(dother, dother);
  DeviceCsr<float> uploaded(rt().context(), reference::spgemm(a, a));
  DeviceCsr<float> wrong_shape = rt().spgemm(dother, dother);
  const auto expect_refused = [&](DeviceCsr<float>& c, const std::string& needle) {
    try {
      rt().spgemm_numeric(da, da, c);
      ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refused(from_other, "was made by spgemm from other patterns than A's and B's");
  expect_refused(uploaded, "was not made by spgemm");
  const Csr<float> rect = with_values<float>(generate::uniform(500, 300, 4, next_seed()), next_seed());
  const DeviceCsr<float> drect(rt().context(), rect);
  try {
    rt().spgemm_numeric(da, drect, wrong_shape);
    ADD_FAILURE() << "a 500x500 C accepted for a 500x300 product";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("C is 500x500 but the product is 500x300"), std::string::npos) << e.what();
  }
}

// ---- memory ----

// The memory limit under which row_hash needs row panels for A·B in `dtype`: C's arrays at the
// plan's bound of NNZ(C) and 60% of one pass's scratch (explain's plan for this GPU: the
// estimate the runtime makes, without the device's free memory).
int64_t panel_limit(const Csr<double>& a, const Csr<double>& b, DType dtype) {
  Options o;
  o.variant = "row_hash";
  const Decision one_pass = explain_spgemm(a.pattern(), b.pattern(), dtype, o);
  const nlohmann::json& memory = one_pass.features.at("memory");
  const int64_t c_bytes = variants::output_bytes(a.rows, memory.at("c_nnz_assumed").get<int64_t>(), dtype);
  return c_bytes + memory.at("workspace_bytes").at("row_hash").get<int64_t>() * 6 / 10;
}

// Under a limit below one pass's peak, row_hash runs C in row panels (the Decision says how
// many) into one CSR C equal to the reference's, f32 and f64, on a rectangular A·B and a
// power-law A·A; then the numeric phase panel by panel on new values (positions off), C's
// values poisoned.
template <class T>
void check_row_panels(Runtime& rt, uint64_t seed) {
  const Csr<double> rect_a = generate::uniform(3000, 1700, 9, seed);
  const Csr<double> rect_b = generate::uniform(1700, 900, 6, seed + 3);
  const Csr<double> rmat = generate::from_spec("rmat:8192:90000", seed);
  for (const auto& [name, a_pattern, b_pattern] : {std::tuple<const char*, const Csr<double>&, const Csr<double>&>{"rectangular", rect_a, rect_b},
                                                   {"rmat A·A", rmat, rmat}}) {
    Options o;
    o.variant = "row_hash";
    o.memory_limit_bytes = panel_limit(a_pattern, b_pattern, dtype_of<T>::value);
    SCOPED_TRACE(std::string(name) + " " + to_string(dtype_of<T>::value) + " limit " + std::to_string(*o.memory_limit_bytes));
    Csr<T> a = with_values<T>(a_pattern, seed + 5);
    Csr<T> b = with_values<T>(b_pattern, seed + 6);
    DeviceCsr<T> da(rt.context(), a), db(rt.context(), b);
    CallInfo info;
    DeviceCsr<T> c = rt.spgemm(da, db, o, &info);
    ASSERT_TRUE(info.decision);
    EXPECT_GT(info.decision->params.at("panels").template get<int>(), 1) << describe(*info.decision);
    EXPECT_LE(info.decision->features.at("memory").at("peak_bytes").at("row_hash").template get<int64_t>(), *o.memory_limit_bytes);
    expect_same_product(c.download(), reference::spgemm(a, b));
    generate::fill_random(a.values, seed + 7);
    da.update_values(a.values);
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    o.keep_positions = false;  // the plan's panels again
    const NumericCallInfo numeric = rt.spgemm_numeric(da, db, c, o);
    EXPECT_TRUE(numeric.plan_reused);
    EXPECT_EQ(numeric.numeric, "recompute: Options::keep_positions is off");
    expect_same_product(c.download(), reference::spgemm(a, b));
  }
}

// The numeric phase by positions on rows of each kind of task of the blocks' kernel
// (formats/spgemm_positions.hpp), next to rows of 48 products grouped into blocks: a row of
// 12000 products on 500 columns (cut into runs summed in shared memory and added), one of
// 12000 over 20000 columns (about 9000 entries: a block of the wide rows), one of 80000 over
// 200000 columns (about 66000 entries: added to C directly, 4-byte positions); then
// keep_positions off (the plan's variant again). And on a band (about 1640 products a row over
// 129 entries) under a memory limit that C and row_hash's workspace fit but 2 bytes a product
// do not: rows. C poisoned and new values each round.
// The first call's options of check_numeric_rounds, forcing a kernel.
std::function<Options(int64_t)> forcing(PositionsKernel kernel) {
  return [kernel](int64_t) {
    Options o;
    o.positions_kernel = kernel;
    return o;
  };
}

template <class T>
void check_numeric_rounds(Runtime& rt, const Csr<double>& a_pattern, const Csr<double>& b_pattern,
                          const std::function<Options(int64_t c_nnz)>& first, const std::vector<std::string>& expected, uint64_t seed) {
  Csr<T> a = with_values<T>(a_pattern, seed + 1);
  Csr<T> b = with_values<T>(b_pattern, seed + 2);
  DeviceCsr<T> da(rt.context(), a), db(rt.context(), b);
  DeviceCsr<T> c = rt.spgemm(da, db);
  Options o = first(c.nnz());
  for (std::size_t round = 0; round < expected.size(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    generate::fill_random(a.values, seed + 10 + round);
    generate::fill_random(b.values, seed + 20 + round);
    da.update_values(a.values);
    db.update_values(b.values);
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    if (round + 1 == expected.size() && expected.size() > 1) o.keep_positions = false;
    const NumericCallInfo info = rt.spgemm_numeric(da, db, c, o);
    // "prefix*part": the path starts with prefix and holds part further on.
    const std::string& want = expected[round];
    const std::size_t star = want.find('*');
    EXPECT_EQ(info.numeric.rfind(want.substr(0, star), 0), 0u) << info.numeric;
    if (star != std::string::npos) {
      EXPECT_NE(info.numeric.find(want.substr(star + 1)), std::string::npos) << info.numeric;
    }
    expect_same_product(c.download(), reference::spgemm(a, b));
  }
}

template <class T>
void check_numeric_paths(Runtime& rt, uint64_t seed) {
  const auto plain = forcing(PositionsKernel::Blocks);  // the plan's own below 8 M products is entries
  check_numeric_rounds<T>(rt, with_long_first_row(300, 2000, 6, 1500, seed), generate::uniform(2000, 500, 8, seed + 5), plain,
                          {"positions: 2 bytes", "positions: 2 bytes", "recompute: Options::keep_positions is off"}, seed);
  check_numeric_rounds<T>(rt, with_long_first_row(300, 2000, 6, 1500, seed), generate::uniform(2000, 20000, 8, seed + 6), plain,
                          {"positions: 2 bytes"}, seed);
  check_numeric_rounds<T>(rt, with_long_first_row(300, 12000, 6, 10000, seed), generate::uniform(12000, 200000, 8, seed + 7),
                          plain, {"positions: 4 bytes"}, seed);
  const Csr<double> band = generate::banded(3000, 64, 32, seed);
  check_numeric_rounds<T>(rt, band, band, [](int64_t c_nnz) {
    Options o;
    o.memory_limit_bytes = c_nnz * 16;  // C's 8 to 12 bytes an entry and row_hash's workspace; positions need about 25
    return o;
  }, {"rows: *(positions take up to "}, seed);
}

// The numeric phase by entries (formats/spgemm_entry_products.hpp), the plan's below 8 M
// products: rows of 48 products beside a row of 12000 products on 500 columns (entries of
// about 24 products, several ranges' worth), one of 80000 over 200000 columns (about 66000
// entries of about one product); a power-law graph squared (timed against a warp a task, and
// forced); 2000 rows whose 450 products land
// on 8 entries (entries spanning steps), and 20 rows whose 4500 do (every entry cut into
// parts, forced: their dense tiles would time the tiles too); then keep_positions off. Then the
// first pair under a memory limit that the blocks' 2 bytes a product fit and the entries' 8 do
// not: the blocks' kernel. C poisoned and new values each round.
template <class T>
void check_entry_sums(Runtime& rt, uint64_t seed) {
  const auto plain = [](int64_t) { return Options{}; };
  const auto forced = forcing(PositionsKernel::Entries);
  const std::string entries = "positions: entries, 8 bytes a product";
  check_numeric_rounds<T>(rt, with_long_first_row(300, 2000, 6, 1500, seed), generate::uniform(2000, 500, 8, seed + 5), plain,
                          {entries, entries, "recompute: Options::keep_positions is off"}, seed);
  check_numeric_rounds<T>(rt, with_long_first_row(300, 12000, 6, 10000, seed), generate::uniform(12000, 200000, 8, seed + 7),
                          plain, {entries}, seed);
  const Csr<double> power = generate::chung_lu(30000, 150000, 2.8, seed);  // about 3 M products
  const int64_t power_products = spgemm_features(power.pattern(), power.pattern()).products;
  ASSERT_LT(power_products, plan::kWarpTaskProducts);
  ASSERT_GE(power_products, plan::kTimedEntriesProducts);
  // Timed against a warp a task on the first call, the faster kept (the second round reuses it).
  const std::string timed = "positions: *; timed on the first call: a warp a task ";
  check_numeric_rounds<T>(rt, power, power, plain, {timed, timed, "recompute: Options::keep_positions is off"}, seed);
  check_numeric_rounds<T>(rt, power, power, forced, {entries}, seed);
  const auto [hot_a, hot_b] = test::hot_entries(2000, 300);  // about 56 products an entry: two steps each
  check_numeric_rounds<T>(rt, hot_a, hot_b, forced, {entries}, seed);
  const auto [hub_a, hub_b] = test::hot_entries(20, 3000);  // about 560 an entry, ranges of 64: every entry in parts
  check_numeric_rounds<T>(rt, hub_a, hub_b, forced, {entries + "*entries cut into parts"}, seed);
  const Csr<double> long_a = with_long_first_row(300, 2000, 6, 1500, seed), b = generate::uniform(2000, 500, 8, seed + 5);
  const SpgemmFeatures f = spgemm_features(long_a.pattern(), b.pattern());
  check_numeric_rounds<T>(rt, long_a, b, [&f](int64_t) {
    Options o;
    // The blocks' 2 bytes a product, their tasks and their build's scratch; not the entries' 8
    // bytes a product and their build's.
    o.memory_limit_bytes = 4 * f.products + plan::blocks_build_bytes(f.a.nnz, f.a.rows);
    return o;
  }, {"positions: 2 bytes a product, "}, seed);
}

TEST_F(SpgemmGpu, TheNumericPhaseByEntriesF32) { check_entry_sums<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByEntriesF64) { check_entry_sums<double>(rt(), next_seed()); }

// Each positions kernel (and rows) forced on one C (each kept on it beside the others), and each again
// replayed as a graph (Options::replay_launches) with new values: all equal to the reference;
// the replayed calls say they were, from the first.
template <class T>
void check_forced_kernels_and_replay(Runtime& rt, uint64_t seed) {
  const Csr<double> pattern = generate::chung_lu(6000, 60000, 2.3, seed);
  Csr<T> a = with_values<T>(pattern, seed + 1);
  DeviceCsr<T> da(rt.context(), a);
  DeviceCsr<T> c = rt.spgemm(da, da);
  // Each kernel's description names it: its ranges, its tasks, its wide rows' tasks.
  const std::vector<std::pair<PositionsKernel, std::string>> kernels = {
      {PositionsKernel::Entries, "warp ranges"}, {PositionsKernel::Warps, "a warp a task"}, {PositionsKernel::Blocks, "of wide rows"},
      {PositionsKernel::Rows, "rows of C in tables"}};
  for (bool replay : {false, true})
    for (const auto& [kernel, named] : kernels)
      for (int round = 0; round < 2; ++round) {
        SCOPED_TRACE(std::string(to_string(kernel)) + (replay ? " replayed" : "") + " round " + std::to_string(round));
        generate::fill_random(a.values, seed + 10 + uint64_t(round) + (replay ? 5 : 0));
        da.update_values(a.values);
        c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
        Options o;
        o.positions_kernel = kernel;
        o.replay_launches = replay;
        const NumericCallInfo info = rt.spgemm_numeric(da, da, c, o);
        EXPECT_EQ(info.numeric.rfind(kernel == PositionsKernel::Rows ? "rows: " : "positions: ", 0), 0u) << info.numeric;
        EXPECT_NE(info.numeric.find(named), std::string::npos) << info.numeric;
        EXPECT_EQ(info.launched_as_graph, replay);
        expect_same_product(c.download(), reference::spgemm(a, a));
      }
}

TEST_F(SpgemmGpu, EveryPositionsKernelForcedAndReplayedF32) { check_forced_kernels_and_replay<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, EveryPositionsKernelForcedAndReplayedF64) { check_forced_kernels_and_replay<double>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByPositionsAndWithoutF32) { check_numeric_paths<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByPositionsAndWithoutF64) { check_numeric_paths<double>(rt(), next_seed()); }

// The numeric phase a warp a task (formats/spgemm_warp_tasks.hpp), which the plan takes from
// 8 M products: rows of 256 products grouped into tasks beside a row of 320000 products over
// about 60000 entries (cut into slices, each cut into parts), with B's rows sorted and then
// shuffled with a repeated column; a band (about 190 products a row over some 50 entries: a
// warp's step often holds two products of one entry); 2000 rows whose 4500 products each land
// on 8 entries (up to 32 lanes of a step on one entry, each row cut into parts); then
// keep_positions off. C poisoned and new values each round.
template <class T>
void check_warp_tasks(Runtime& rt, uint64_t seed) {
  const auto plain = forcing(PositionsKernel::Warps);  // the plan's own would also time the blocks' kernel
  const std::string warps = "positions: 2 bytes a product, a warp a task";
  const Csr<double> long_a = with_long_first_row(40000, 40000, 16, 20000, seed);
  const Csr<double> wide_b = generate::uniform(40000, 60000, 16, seed + 5);
  check_numeric_rounds<T>(rt, long_a, wide_b, plain, {warps, warps, "recompute: Options::keep_positions is off"}, seed);
  check_numeric_rounds<T>(rt, long_a, test::shuffled_with_repeats(wide_b, seed), plain, {warps}, seed);
  const Csr<double> band = generate::banded(50000, 16, 24, seed);  // 9.4 M products
  check_numeric_rounds<T>(rt, band, band, plain, {warps}, seed);
  const auto [hot_a, hot_b] = test::hot_entries(2000, 3000);
  check_numeric_rounds<T>(rt, hot_a, hot_b, plain, {warps}, seed);
}

// B's columns relabelled j -> j * 7919 mod n (a bijection: n is not a multiple of 7919), so
// its tiles scatter while every product count stays.
Csr<double> scattered_columns(Csr<double> m) {
  for (int32_t& j : m.col_idx) j = int32_t(int64_t(j) * 7919 % m.cols);
  return m;
}

// From 8 M products the plan's first call builds a warp a task and the blocks' kernel, times
// both and keeps the faster: a band of 9.4 M products times the band with its columns
// scattered (tile products too sparse to time the tiles), two rounds (the second reuses the
// choice), against the reference with C poisoned; then keep_positions off.
template <class T>
void check_timed_positions(Runtime& rt, uint64_t seed) {
  const auto plain = [](int64_t) { return Options{}; };
  const Csr<double> band = generate::banded(50000, 16, 24, seed), scattered = scattered_columns(band);
  const SpgemmFeatures f = spgemm_features(band.pattern(), scattered.pattern());
  ASSERT_GE(f.products, plan::kWarpTaskProducts);
  ASSERT_LT(double(f.products), plan::kTimedTileDensity * double(f.tile_products));
  const std::string timed = "positions: 2 bytes a product*timed on the first call: a warp a task ";
  check_numeric_rounds<T>(rt, band, scattered, plain, {timed, timed, "recompute: Options::keep_positions is off"}, seed);
}

// The numeric phase by tiles (ops/spgemm_reuse_tiles.hpp), forced: dense 12 x 12 blocks across
// the 8 x 8 tiles with scattered entries beside them and a partial last tile row (A·A: one
// packed array); a rectangular A·B of two operands (B's tiles packed apart); the same blocks
// on a C row_hash made. Replayed as a graph in the last round. Then dense 20 x 20 blocks (about
// 260 products a tile product), where the plan's first call times the tiles against entries
// and keeps the faster. C poisoned and new values each round.
template <class T>
void check_tile_sums(Runtime& rt, uint64_t seed) {
  const auto tiles = forcing(PositionsKernel::Tiles);
  const Csr<double> blocks = generate::from_spec("blockdiag:1001:12:2", seed);
  check_numeric_rounds<T>(rt, blocks, blocks, tiles, {"tiles: ", "tiles: ", "recompute: Options::keep_positions is off"}, seed);
  const Csr<double> rect_a = generate::from_spec("blockdiag:700:16:3", seed), rect_b = generate::uniform(700, 450, 6, seed + 3);
  check_numeric_rounds<T>(rt, rect_a, rect_b, tiles, {"tiles: "}, seed);
  Csr<T> a = with_values<T>(blocks, seed + 1);
  DeviceCsr<T> da(rt.context(), a);
  Options hashed;
  hashed.variant = "row_hash";
  DeviceCsr<T> c = rt.spgemm(da, da, hashed);
  for (bool replay : {false, true}) {
    SCOPED_TRACE(replay ? "row_hash's C, replayed" : "row_hash's C");
    generate::fill_random(a.values, seed + (replay ? 3 : 2));
    da.update_values(a.values);
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    Options o = tiles(0);
    o.replay_launches = replay;
    const NumericCallInfo info = rt.spgemm_numeric(da, da, c, o);
    EXPECT_EQ(info.numeric.rfind("tiles: ", 0), 0u) << info.numeric;
    EXPECT_EQ(info.launched_as_graph, replay);
    expect_same_product(c.download(), reference::spgemm(a, a));
  }
  const Csr<double> dense = generate::from_spec("blockdiag:3000:20:0", seed);
  const SpgemmFeatures f = spgemm_features(dense.pattern(), dense.pattern());
  ASSERT_GE(double(f.products), plan::kTimedTileDensity * double(f.tile_products));
  check_numeric_rounds<T>(rt, dense, dense, [](int64_t) { return Options{}; }, {"*timed on the first call: tiles "}, seed);
}

// The numeric phase by rows (ops/spgemm_reuse_rows.hpp), forced: a band (each row's columns
// within its table: summed at their offsets); a power-law graph squared (rows in every bin, the
// hubs' past every key but within the last table); rows without entries and empty columns; a
// rectangular A·B whose rows span 60000 columns, one of them about 4600 entries (hashed, in
// the small bins and the last). Then a row of about 66000 entries, past every table: declined,
// the variant again. C poisoned and new values each round (the first pair's last round with
// keep_positions off).
template <class T>
void check_row_sums(Runtime& rt, uint64_t seed) {
  const auto rows = forcing(PositionsKernel::Rows);
  const std::string kept = "rows: *rows of C in tables";
  const Csr<double> band = generate::banded(20000, 16, 24, seed);
  check_numeric_rounds<T>(rt, band, band, rows, {kept, kept, "recompute: Options::keep_positions is off"}, seed);
  const Csr<double> power = generate::chung_lu(8000, 80000, 2.2, seed);
  check_numeric_rounds<T>(rt, power, power, rows, {kept}, seed);
  const Csr<double> holes = empty_columns(test::empty_every(generate::from_spec("uniform:900:10", seed), 3), 4);
  check_numeric_rounds<T>(rt, holes, holes, rows, {kept}, seed);
  check_numeric_rounds<T>(rt, with_long_first_row(300, 2000, 6, 600, seed), generate::uniform(2000, 60000, 8, seed + 3), rows, {kept},
                          seed);
  check_numeric_rounds<T>(rt, with_long_first_row(300, 12000, 6, 10000, seed), generate::uniform(12000, 200000, 8, seed + 7), rows,
                          {"recompute: 1 rows of C have more than 8192 entries"}, seed);
}

TEST_F(SpgemmGpu, TheNumericPhaseByRowsF32) { check_row_sums<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByRowsF64) { check_row_sums<double>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByTilesF32) { check_tile_sums<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseByTilesF64) { check_tile_sums<double>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheFirstNumericCallTimesAWarpATaskAgainstBlocksF32) { check_timed_positions<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheFirstNumericCallTimesAWarpATaskAgainstBlocksF64) { check_timed_positions<double>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseAWarpATaskF32) { check_warp_tasks<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, TheNumericPhaseAWarpATaskF64) { check_warp_tasks<double>(rt(), next_seed()); }

// The bench's peak memory (cuda::held_bytes): a DeviceBuffer and a result-pool block count
// while held and not after; the peak keeps the most until reset; a call's C is held after it.
TEST_F(SpgemmGpu, HeldBytesFollowAllocationsAndPoolBlocks) {
  rt().context().synchronize();
  const int64_t base = cuda::held_bytes().current;
  cuda::reset_peak_held_bytes();
  {
    const DeviceBuffer plain(rt().context(), 1 << 20);
    EXPECT_EQ(cuda::held_bytes().current, base + (1 << 20));
    const DeviceBuffer pooled = cuda::result_pool(rt().context()).allocate_buffer(3 << 20, nullptr);
    EXPECT_EQ(cuda::held_bytes().current, base + (4 << 20));
  }
  EXPECT_EQ(cuda::held_bytes().current, base);
  EXPECT_EQ(cuda::held_bytes().peak, base + (4 << 20));
  cuda::reset_peak_held_bytes();
  EXPECT_EQ(cuda::held_bytes().peak, base);
  const Csr<float> a = with_values<float>(generate::uniform(500, 500, 6, next_seed()), next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  const int64_t with_a = cuda::held_bytes().current;
  const DeviceCsr<float> c = rt().spgemm(da, da);
  EXPECT_GE(cuda::held_bytes().current - with_a, int64_t(c.nnz()) * 8) << "C's columns and values";
  EXPECT_GE(cuda::held_bytes().peak, cuda::held_bytes().current);
}

// row_hash forced, `params` over its planned ones, C's positions not kept (the numeric phase
// recomputes).
Options row_hash_with(const nlohmann::json& params) {
  Options o;
  o.variant = "row_hash";
  o.params = params;
  o.keep_positions = false;
  return o;
}

// A row of 12000 products over 60000 columns: wider than one window of shared sums (f32 53248
// columns, f64 26624), so the plan sums it in windows (2 in f32, 3 in f64), and again in
// windows of 4096 columns (15, more than the 8 the kernels once stopped at); whole call and the
// variant's numeric phase again, against the reference; C poisoned.
template <class T>
void check_dense_windows(Runtime& rt, uint64_t seed) {
  Csr<T> a = with_values<T>(with_long_first_row(300, 2000, 6, 1500, seed), seed + 1);
  const Csr<T> b = with_values<T>(generate::uniform(2000, 60000, 8, seed + 2), seed + 3);
  DeviceCsr<T> da(rt.context(), a);
  const DeviceCsr<T> db(rt.context(), b);
  for (const nlohmann::json& params : {nlohmann::json::object(), nlohmann::json{{"dense_window", 4096}}}) {
    SCOPED_TRACE(params.dump());
    const Options o = row_hash_with(params);
    CallInfo info;
    DeviceCsr<T> c = rt.spgemm(da, db, o, &info);
    const int span = info.decision->params.at("dense_span").template get<int>();
    const int window = info.decision->params.at("dense_window").template get<int>();
    EXPECT_GE(span, 58000) << describe(*info.decision);
    EXPECT_LT(window, span) << describe(*info.decision);
    if (!params.empty()) {
      EXPECT_GT((span + window - 1) / window, 8) << describe(*info.decision);
    }
    expect_same_product(c.download(), reference::spgemm(a, b));
    generate::fill_random(a.values, seed + 4);
    da.update_values(a.values);
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    rt.spgemm_numeric(da, db, c, o);
    expect_same_product(c.download(), reference::spgemm(a, b));
  }
}

TEST_F(SpgemmGpu, WideDenseRowsSumInWindowsF32) { check_dense_windows<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, WideDenseRowsSumInWindowsF64) { check_dense_windows<double>(rt(), next_seed()); }

// Long rows of both kinds in one product: 400 rows of 20 entries spread over 40000 columns
// (400 products over about 40000 columns, 100 columns a product: hashed in a shared bin) above
// 300 rows of 40 consecutive columns (800 products within about 170 columns: dense), B banded.
// The planned dense span covers every row, so the bins the thin rows hash in must keep their
// room. Against the reference: row_hash as planned, with the largest shared bin at 256 products
// (the thin rows then pass every shared bin and go dense), and the numeric phase again; C
// poisoned.
template <class T>
void check_thin_and_narrow_long_rows(Runtime& rt, uint64_t seed) {
  const Csr<double> thin = generate::uniform(400, 40000, 20, seed);
  Csr<double> a_pattern = thin;
  for (int32_t r = 0; r < 300; ++r) {
    const int32_t first = (r * 131) % (40000 - 40);
    for (int32_t c = first; c < first + 40; ++c) {
      a_pattern.col_idx.push_back(c);
      a_pattern.values.push_back(1.0);
    }
    a_pattern.row_ptr.push_back(int32_t(a_pattern.col_idx.size()));
  }
  a_pattern.rows = 700;
  Csr<T> a = with_values<T>(a_pattern, seed + 1);
  const Csr<T> b = with_values<T>(generate::banded(40000, 20, 64, seed + 2), seed + 3);
  const Csr<T> want = reference::spgemm(a, b);
  int32_t widest = 0;  // C's widest row: the span the plan's dense bin must cover
  for (int32_t r = 0; r < want.rows; ++r)
    if (want.row_ptr[r + 1] > want.row_ptr[r])
      widest = std::max(widest, want.col_idx[want.row_ptr[r + 1] - 1] - want.col_idx[want.row_ptr[r]] + 1);
  ASSERT_GT(widest, 64 * 400) << "the thin rows must be spread wider than the dense bin takes";
  DeviceCsr<T> da(rt.context(), a);
  const DeviceCsr<T> db(rt.context(), b);
  for (const nlohmann::json& params : {nlohmann::json::object(), nlohmann::json{{"max_shared_row", 256}}}) {
    SCOPED_TRACE(params.dump());
    const Options o = row_hash_with(params);
    CallInfo info;
    DeviceCsr<T> c = rt.spgemm(da, db, o, &info);
    EXPECT_GE(info.decision->params.at("dense_span").template get<int>(), widest) << describe(*info.decision);
    expect_same_product(c.download(), want);
    c.update_values(std::vector<T>(std::size_t(c.nnz()), std::numeric_limits<T>::quiet_NaN()));
    rt.spgemm_numeric(da, db, c, o);
    expect_same_product(c.download(), want);
  }
}

TEST_F(SpgemmGpu, ThinLongRowsHashBesideDenseOnesF32) { check_thin_and_narrow_long_rows<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, ThinLongRowsHashBesideDenseOnesF64) { check_thin_and_narrow_long_rows<double>(rt(), next_seed()); }

TEST_F(SpgemmGpu, RowPanelsUnderAMemoryLimitF32) { check_row_panels<float>(rt(), next_seed()); }

TEST_F(SpgemmGpu, RowPanelsUnderAMemoryLimitF64) { check_row_panels<double>(rt(), next_seed()); }

// Auto under the panel limit: whatever it takes (row_hash in panels, or cuSPARSE with an
// algorithm whose buffers fit) computes the reference's C.
TEST_F(SpgemmGpu, AutoUnderAMemoryLimitComputesTheProduct) {
  const Csr<double> pattern = generate::from_spec("rmat:8192:90000", next_seed());
  Options o;
  o.memory_limit_bytes = panel_limit(pattern, pattern, DType::F64);
  check_product<double>(rt(), "rmat A·A under a limit", pattern, pattern, o, next_seed());
}

// cuSPARSE under a limit a little above C's arrays (at the planner's bound of NNZ(C), so the
// plan admits it): the first of ALG1, ALG2, ALG3 whose buffers fit runs, or, when none does,
// the call fails naming each one's bytes (a forced choice does not fall back).
TEST_F(SpgemmGpu, CusparseUnderAMemoryLimitFitsAnAlgorithmOrNamesTheBytes) {
  const Csr<double> pattern = generate::from_spec("rmat:8192:90000", next_seed());
  const Csr<float> a = with_values<float>(pattern, next_seed());
  const Csr<float> want = reference::spgemm(a, a);
  const DeviceCsr<float> da(rt().context(), a);
  const Decision unlimited = explain_spgemm(a.pattern(), a.pattern(), DType::F32);
  const int64_t c_bytes =
      variants::output_bytes(a.rows, unlimited.features.at("memory").at("c_nnz_assumed").get<int64_t>(), DType::F32);
  for (const int64_t spare : {int64_t(64) << 20, int64_t(4) << 20, int64_t(256) << 10}) {
    Options o;
    o.variant = "cusparse";
    o.memory_limit_bytes = c_bytes + spare;
    SCOPED_TRACE("limit " + std::to_string(*o.memory_limit_bytes));
    try {
      expect_same_product(rt().spgemm(da, da, o).download(), want);
    } catch (const CudaError& e) {
      EXPECT_NE(std::string(e.what()).find("no algorithm fits"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("alg3 at chunk fraction"), std::string::npos) << e.what();
    }
  }
}

// A limit too small for anything is refused by the planner, naming the bytes (the planner runs
// before any kernel is loaded or any scratch or C allocated); a limit of 0 is refused naming it;
// the same handle then runs the product without a limit.
TEST_F(SpgemmGpu, ALimitTooSmallForAnythingIsRefusedNamingTheBytes) {
  const Csr<double> pattern = generate::from_spec("uniform:3000:9", next_seed());
  const Csr<float> a = with_values<float>(pattern, next_seed());
  const DeviceCsr<float> da(rt().context(), a);
  Options o;
  o.memory_limit_bytes = 4096;
  try {
    rt().spgemm(da, da, o);
    ADD_FAILURE() << "a 4096-byte limit accepted";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 4096 bytes memory_limit_bytes allows"), std::string::npos) << e.what();
  }
  o.memory_limit_bytes = 0;
  try {
    rt().spgemm(da, da, o);
    ADD_FAILURE() << "a limit of 0 accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("memory_limit_bytes = 0 must be positive"), std::string::npos) << e.what();
  }
  expect_same_product(rt().spgemm(da, da).download(), reference::spgemm(a, a));
}

// C's arrays come from the runtime's stream-ordered pool: they stay valid, and free cleanly,
// after the runtime that made them is gone.
TEST_F(SpgemmGpu, TheProductOutlivesItsRuntime) {
  const Csr<double> pattern = generate::from_spec("band:2000:8:30", next_seed());
  const Csr<float> a = with_values<float>(pattern, next_seed());
  std::optional<DeviceCsr<float>> c;
  {
    Runtime own;
    const DeviceCsr<float> da(own.context(), a);
    c.emplace(own.spgemm(da, da));
  }
  expect_same_product(c->download(), reference::spgemm(a, a));
  c.reset();
}

TEST_F(SpgemmGpu, EmptyOperandsGiveAnEmptyProduct) {
  const Csr<double> full = generate::uniform(50, 40, 5, next_seed());
  Csr<double> empty;
  empty.rows = 40;
  empty.cols = 30;
  empty.row_ptr.assign(41, 0);
  for (const Options& o : every_variant()) {
    SCOPED_TRACE(label(o));
    const DeviceCsr<double> da(rt().context(), full), db(rt().context(), empty);
    const DeviceCsr<double> c = rt().spgemm(da, db, o);
    EXPECT_EQ(c.rows(), 50);
    EXPECT_EQ(c.cols(), 30);
    EXPECT_EQ(c.nnz(), 0);
    EXPECT_EQ(c.download().row_ptr, std::vector<int32_t>(51, 0));
    Csr<double> none;
    none.rows = 0;
    none.cols = 50;
    const DeviceCsr<double> d0(rt().context(), none);
    EXPECT_EQ(rt().spgemm(d0, da, o).rows(), 0);
  }
}

TEST_F(SpgemmGpu, MismatchedShapesAndTooManyProductsAreRefused) {
  const Csr<float> a = with_values<float>(generate::uniform(30, 20, 3, 1), 2);
  const DeviceCsr<float> da(rt().context(), a);
  try {
    rt().spgemm(da, da);
    ADD_FAILURE() << "a 30x20 A·A ran";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("A is 30x20 but B has 30 rows"), std::string::npos) << e.what();
  }
  Csr<float> dup;
  dup.rows = 1;
  dup.cols = 1;
  dup.col_idx.assign(50000, 0);
  dup.values.assign(50000, 1.0f);
  dup.row_ptr = {0, 50000};
  Csr<float> wide;
  wide.rows = 1;
  wide.cols = 50000;
  for (int32_t c = 0; c < 50000; ++c) wide.col_idx.push_back(c);
  wide.values.assign(50000, 1.0f);
  wide.row_ptr = {0, 50000};
  const DeviceCsr<float> dd(rt().context(), dup), dw(rt().context(), wide);
  EXPECT_THROW(rt().spgemm(dd, dw), InvalidInputError);  // 2.5e9 products
}

TEST_F(SpgemmGpu, SharedMatricesSquared) {
  const auto files = test::shared_matrix_files();
  if (files.empty()) GTEST_SKIP() << "no shared matrices";
  int checked = 0;
  for (const std::string& file : files) {
    const Csr<double> m = io::read_csr<double>(file);
    if (m.rows != m.cols || m.nnz() > 300000) continue;  // A·A of the smaller square ones
    const bool sorted = spgemm_features(m.pattern(), m.pattern()).a_sorted;
    for (const char* variant : {"row_hash", "cusparse"}) {
      if (!sorted && std::string(variant) == "cusparse") continue;
      Options o;
      o.variant = variant;
      check_product<float>(rt(), file, m, m, o, next_seed());
    }
    if (++checked == 8) break;
  }
}

}  // namespace
}  // namespace sparsejit
