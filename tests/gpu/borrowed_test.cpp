// Handles over device memory the caller owns (what the Python package wraps PyTorch and CuPy
// arrays in): a borrowed buffer is never freed, a DeviceCsr over borrowed arrays multiplies
// like an uploaded one, follows values the caller rewrites (values_changed) or replaces
// (use_values), and refuses arrays whose sizes or pattern are wrong; a DeviceDense over a
// borrowed strided array reads only its rows×cols elements and, as C, writes only them.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

// Runs `call`, which must throw E with a message containing `part`.
template <class E, class F>
void expect_throw_containing(F call, const std::string& part) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one containing '" << part << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

class BorrowedGpu : public test::GpuSuite {
 protected:
  DeviceBuffer borrow(const DeviceBuffer& owner) { return DeviceBuffer::borrow(rt().context(), owner.ptr(), owner.bytes()); }
  // A handle over the arrays of `owner`, which keeps them.
  DeviceCsr<float> borrowed_view(const DeviceCsr<float>& owner) {
    return DeviceCsr<float>(rt().context(), owner.rows(), owner.cols(), borrow(owner.row_ptr()), borrow(owner.col_idx()),
                            borrow(owner.values()), nullptr);
  }
  Csr<float> random_matrix(int32_t rows, int32_t cols, int32_t per_row) {
    Csr<float> a = cast<float>(generate::uniform(rows, cols, per_row, next_seed()));
    generate::fill_random(a.values, next_seed());
    return a;
  }
  // C = A·B (or Aᵀ·B) on the device with `variant` forced ("" for auto), against the reference
  // with the values `a` holds.
  void expect_spmm(const DeviceCsr<float>& handle, const Csr<float>& a, const std::string& variant, bool transpose) {
    Dense<float> b(transpose ? a.rows : a.cols, 24), expected;
    generate::fill_random(b, next_seed());
    reference::spmm(a, b, expected, transpose);
    DeviceDense<float> db(rt().context(), b), dc(rt().context(), expected.rows, expected.cols);
    Options options;
    options.variant = variant;
    options.transpose_a = transpose;
    rt().spmm(handle, db, dc, options);
    EXPECT_LT(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), 1e-5)
        << "variant '" << variant << "', transpose " << transpose;
  }
};

TEST_F(BorrowedGpu, BorrowedBufferIsNeverFreed) {
  const DeviceBuffer owner = DeviceBuffer::from_host(rt().context(), std::vector<int32_t>{1, 2, 3});
  {
    DeviceBuffer view = borrow(owner);
    EXPECT_TRUE(view.borrowed());
    DeviceBuffer moved = std::move(view);  // the move keeps it borrowed
    EXPECT_TRUE(moved.borrowed());
    EXPECT_EQ(moved.ptr(), owner.ptr());
  }
  EXPECT_EQ(owner.download_as<int32_t>(3), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(owner.borrowed());
  expect_throw_containing<InvalidInputError>([&] { DeviceBuffer::borrow(rt().context(), 0, 8); }, "null pointer");
}

TEST_F(BorrowedGpu, CsrOverBorrowedArraysMultipliesLikeAnUploadedOne) {
  const Csr<float> a = random_matrix(300, 200, 12);
  const DeviceCsr<float> owner(rt().context(), a);
  const DeviceCsr<float> view = borrowed_view(owner);
  EXPECT_EQ(view.nnz(), a.nnz());
  EXPECT_TRUE(view.values().borrowed());
  const PatternView p = view.host_pattern();
  EXPECT_EQ(std::vector<int32_t>(p.row_ptr, p.row_ptr + a.rows + 1), a.row_ptr);
  EXPECT_EQ(std::vector<int32_t>(p.col_idx, p.col_idx + a.nnz()), a.col_idx);
  for (const std::string variant : {"", "rs", "csr_vector", "cusparse"})  // each computes A·B and Aᵀ·B
    for (bool transpose : {false, true}) expect_spmm(view, a, variant, transpose);
}

TEST_F(BorrowedGpu, ValuesChangedRebuildsWhatTheValuesMade) {
  // rs and dense keep copies of the values (the split, the dense copy): both must follow.
  Csr<float> a = random_matrix(256, 256, 40);
  DeviceCsr<float> owner(rt().context(), a);
  DeviceCsr<float> view = borrowed_view(owner);
  for (const std::string variant : {"rs", "dense"}) {
    expect_spmm(view, a, variant, false);
    generate::fill_random(a.values, next_seed());
    owner.update_values(a.values);  // the caller's memory, rewritten behind the view's back
    const uint64_t before = view.values_version();
    view.values_changed();
    EXPECT_EQ(view.values_version(), before + 1);
    expect_spmm(view, a, variant, false);
  }
}

TEST_F(BorrowedGpu, UseValuesTakesOtherMemory) {
  Csr<float> a = random_matrix(128, 160, 9);
  const DeviceCsr<float> owner(rt().context(), a);
  DeviceCsr<float> view = borrowed_view(owner);
  expect_spmm(view, a, "rs", false);
  generate::fill_random(a.values, next_seed());
  const DeviceBuffer other = DeviceBuffer::from_host(rt().context(), a.values);
  view.use_values(borrow(other));
  EXPECT_EQ(view.values().ptr(), other.ptr());
  expect_spmm(view, a, "rs", false);
  const DeviceBuffer short_values(rt().context(), 4 * sizeof(float));
  expect_throw_containing<InvalidInputError>([&] { view.use_values(borrow(short_values)); },
                                                   "16 bytes, " + std::to_string(a.nnz()) + " elements");
}

// cuSPARSE binds the arrays of a prepared call, so the cusparse variants keep a few calls, one
// per set of arrays: more sets than they keep (a fresh C every call, as from Python), and
// values moved to other memory under the same B and C, must each be computed right.
TEST_F(BorrowedGpu, VendorSpmmFollowsEveryOperandSetAndNewValues) {
  Csr<float> a = random_matrix(120, 90, 8);
  const DeviceCsr<float> owner(rt().context(), a);
  DeviceCsr<float> view = borrowed_view(owner);
  Options options;
  options.variant = "cusparse";
  std::vector<DeviceBuffer> replaced_values;  // the view borrows them: kept to the end
  for (const bool transpose : {false, true}) {
    Dense<float> b(transpose ? a.rows : a.cols, 24), nan(transpose ? a.cols : a.rows, 24), expected;
    generate::fill_random(b, next_seed());
    std::fill(nan.data.begin(), nan.data.end(), std::numeric_limits<float>::quiet_NaN());
    reference::spmm(a, b, expected, transpose);
    const DeviceDense<float> db(rt().context(), b);
    options.transpose_a = transpose;
    std::vector<DeviceDense<float>> outputs;  // all kept: twelve distinct arrays, more than the calls kept
    for (int call = 0; call < 12; ++call) {
      outputs.emplace_back(rt().context(), nan);
      rt().spmm(view, db, outputs.back(), options);
      EXPECT_LT(test::relative_error(test::as_double(outputs.back().download().data), test::as_double(expected.data)), 1e-5)
          << "transpose " << transpose << ", call " << call;
    }
    // The matrix's values moved to other memory: the call kept for the last output must not
    // read the old ones.
    generate::fill_random(a.values, next_seed());
    view.use_values(borrow(replaced_values.emplace_back(DeviceBuffer::from_host(rt().context(), a.values))));
    outputs[11].upload(nan);
    rt().spmm(view, db, outputs[11], options);
    reference::spmm(a, b, expected, transpose);
    EXPECT_LT(test::relative_error(test::as_double(outputs[11].download().data), test::as_double(expected.data)), 1e-5)
        << "transpose " << transpose << ", new values";
  }
}

TEST_F(BorrowedGpu, WrongArraysAreRefusedNamingTheProblem) {
  const DeviceBuffer offsets = DeviceBuffer::from_host(rt().context(), std::vector<int32_t>{0, 2, 3});
  const DeviceBuffer columns = DeviceBuffer::from_host(rt().context(), std::vector<int32_t>{1, 9, 0});
  const DeviceBuffer values = DeviceBuffer::from_host(rt().context(), std::vector<float>{1, 2, 3});
  const Context& ctx = rt().context();
  auto make = [&](int32_t rows, int32_t cols, const DeviceBuffer& o, const DeviceBuffer& c) {
    DeviceCsr<float>(ctx, rows, cols, borrow(o), borrow(c), borrow(values), nullptr);
  };
  expect_throw_containing<InvalidInputError>([&] { make(2, 4, offsets, columns); },
                                                   "row 0: column index 9 out of range [0, 4)");
  expect_throw_containing<InvalidInputError>([&] { make(3, 10, offsets, columns); },
                                                   "CSR row offsets: 12 bytes, 4 elements of 4 bytes need 16");
  const DeviceBuffer short_offsets = DeviceBuffer::from_host(rt().context(), std::vector<int32_t>{0, 1, 2});
  expect_throw_containing<InvalidInputError>([&] { make(2, 10, short_offsets, columns); },
                                                   "row offsets end at 2 but there are 3 column indices");
}

TEST_F(BorrowedGpu, DenseOverAStridedBorrowedArrayReadsOnlyItsElements) {
  // B is a 200×24 block at column 4 of a 200×40 array: leading dimension 40, and the storage
  // from B's first element holds 199·40 + 24 elements, no more. Column 5 would start B off the
  // 16-byte grid the kernels' vector loads need: refused, naming the address.
  const Csr<float> a = random_matrix(100, 200, 10);
  Dense<float> wide(200, 40), b(200, 24), expected;
  generate::fill_random(wide, next_seed());
  for (int32_t r = 0; r < 200; ++r)
    for (int32_t c = 0; c < 24; ++c) b.at(r, c) = wide.at(r, c + 4);
  reference::spmm(a, b, expected);
  const DeviceDense<float> dwide(rt().context(), wide);
  const std::size_t extent = (199 * 40 + 24) * sizeof(float);
  const DeviceDense<float> db(rt().context(), DeviceBuffer::borrow(rt().context(), dwide.buffer().ptr() + 4 * sizeof(float), extent),
                              200, 24, 40);
  expect_throw_containing<InvalidInputError>(
      [&] { DeviceDense<float>(rt().context(), DeviceBuffer::borrow(rt().context(), dwide.buffer().ptr() + 5 * sizeof(float), extent), 200, 24, 40); },
      "not a multiple of 16 bytes");
  const DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> dc(rt().context(), 100, 24);
  rt().spmm(da, db, dc);
  EXPECT_LT(test::relative_error(test::as_double(dc.download().data), test::as_double(expected.data)), 1e-5);
  expect_throw_containing<InvalidInputError>(
      [&] { DeviceDense<float>(rt().context(), DeviceBuffer::borrow(rt().context(), dwide.buffer().ptr(), extent - 4), 200, 24, 40); },
      "needs " + std::to_string(extent) + " bytes, its storage has " + std::to_string(extent - 4));
}

// C as a view of a wider array (leading dimension 40, 24 columns): every SpMM variant, A·B and
// Aᵀ·B (which clear C before adding into it), writes the product and leaves the array's other
// columns as they were.
TEST_F(BorrowedGpu, SpmmIntoAStridedOutputLeavesTheOtherColumns) {
  const Csr<float> a = random_matrix(120, 120, 9);
  const DeviceCsr<float> da(rt().context(), a);
  Dense<float> b(120, 24), wide(120, 40);
  generate::fill_random(b, next_seed());
  generate::fill_random(wide, next_seed());
  const DeviceDense<float> db(rt().context(), b);
  for (const std::string& variant : plan::spmm_variants()) {
    for (const bool transpose : {false, true}) {
      SCOPED_TRACE(variant + (transpose ? " Aᵀ·B" : " A·B"));
      Dense<float> expected;
      reference::spmm(a, b, expected, transpose);
      const DeviceDense<float> dwide(rt().context(), wide);
      DeviceDense<float> dc(rt().context(), DeviceBuffer::borrow(rt().context(), dwide.buffer().ptr(), (119 * 40 + 24) * sizeof(float)),
                            120, 24, 40);
      Options options;
      options.variant = variant;
      options.transpose_a = transpose;
      try {
        rt().spmm(da, db, dc, options);
      } catch (const UnsupportedError&) {
        continue;  // a variant that does not take this problem (e.g. no transposed kernel)
      }
      const Dense<float> after = dwide.download();
      Dense<float> got(120, 24);
      for (int32_t r = 0; r < 120; ++r)
        for (int32_t c = 0; c < 40; ++c) {
          if (c < 24) got.at(r, c) = after.at(r, c);
          else ASSERT_EQ(after.at(r, c), wide.at(r, c)) << "row " << r << ", column " << c << " past C's 24 was written";
        }
      EXPECT_LT(test::relative_error(test::as_double(got.data), test::as_double(expected.data)), 1e-5);
    }
  }
}

// auto, then cusparse into twelve outputs, all kept (more than the variant keeps calls for).
TEST_F(BorrowedGpu, SddmmWritesIntoBorrowedOutputs) {
  const Csr<float> s = random_matrix(90, 70, 7);
  Dense<float> a(90, 16), b(70, 16);
  generate::fill_random(a, next_seed());
  generate::fill_random(b, next_seed());
  Csr<float> expected;
  reference::sddmm(s, a, b, expected);
  const DeviceCsr<float> owner(rt().context(), s);
  const DeviceCsr<float> view = borrowed_view(owner);
  const DeviceDense<float> da(rt().context(), a), db(rt().context(), b);
  const std::vector<float> nan(s.values.size(), std::numeric_limits<float>::quiet_NaN());
  std::vector<DeviceBuffer> outputs;
  for (int call = 0; call < 13; ++call) {
    Options options;
    options.variant = call == 0 ? "" : "cusparse";
    const DeviceBuffer& out = outputs.emplace_back(DeviceBuffer::from_host(rt().context(), nan));
    DeviceBuffer p = borrow(out);
    rt().sddmm(view, da, db, p, options);
    EXPECT_LT(test::relative_error(test::as_double(out.download_as<float>(s.values.size())), test::as_double(expected.values)),
              1e-5)
        << "call " << call;
  }
}

}  // namespace
}  // namespace sparsejit
