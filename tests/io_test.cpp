// Matrix file I/O: every malformed input gets its own test (error type, file, line and the
// offending text in the message), every field/symmetry combination reads to a hand-computed
// CSR, writes read back exactly, and every shared matrix reads to its header's sizes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "sparsejit/error.hpp"
#include "sparsejit/io.hpp"
#include "support/test_support.hpp"

namespace sparsejit::io {
namespace {

namespace fs = std::filesystem;

class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() / ("sparsejit_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_text(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  std::string write_gzip(const std::string& name, const std::string& text) const {
    gzFile file = gzopen(path(name).c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, text.data(), unsigned(text.size())), int(text.size()));
    EXPECT_EQ(gzclose(file), Z_OK);
    return path(name);
  }

  static std::string read_bytes(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
};

// Runs `call`, expects an exception of type E and every one of `parts` in its message.
template <class E>
void expect_error(const std::function<void()>& call, const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// A file whose read_csr<double> must fail with InvalidInputError naming the file, `line`
// and every one of `parts`.
void expect_bad_mtx(const std::string& file, int line, std::vector<std::string> parts) {
  parts.push_back(file + ":" + std::to_string(line) + ": ");
  expect_error<InvalidInputError>([&] { read_csr<double>(file); }, parts);
}

// The same for read_dense<double>.
void expect_bad_dense(const std::string& file, int line, std::vector<std::string> parts) {
  parts.push_back(file + ":" + std::to_string(line) + ": ");
  expect_error<InvalidInputError>([&] { read_dense<double>(file); }, parts);
}

template <class T>
void expect_csr(const Csr<T>& csr, int32_t rows, int32_t cols, const std::vector<int32_t>& row_ptr,
                const std::vector<int32_t>& col_idx, const std::vector<double>& values) {
  EXPECT_EQ(csr.rows, rows);
  EXPECT_EQ(csr.cols, cols);
  EXPECT_EQ(csr.row_ptr, row_ptr);
  EXPECT_EQ(csr.col_idx, col_idx);
  ASSERT_EQ(csr.values.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(double(csr.values[i]), values[i]) << "value " << i;
}

const char* const real_general =
    "%%MatrixMarket matrix coordinate real general\n"
    "% a comment, then a blank line\n"
    "\n"
    "3 4 5\n"
    "1 1 1.5\n"
    "3 4 -2\n"
    "1 3 2.5e0\n"
    "2 2 0.375\n"
    "1 1 0.5\n";  // repeats (1, 1): summed to 2

// ---- malformed input, one test per kind ----

TEST_F(IoTest, MissingBannerNamesTheFirstLine) {
  expect_bad_mtx(write_text("nobanner.mtx", "3 3 1\n1 1 1\n"), 1, {"'%%MatrixMarket' banner", "'3 3 1'"});
}

TEST_F(IoTest, BadBannerIsQuoted) {
  expect_bad_mtx(write_text("bad.mtx", "%%MatrixMarkt matrix coordinate real general\n1 1 1\n1 1 1\n"), 1,
                 {"bad banner", "'%%MatrixMarkt matrix coordinate real"});
  expect_bad_mtx(write_text("short.mtx", "%%MatrixMarket matrix coordinate real\n1 1 1\n1 1 1\n"), 1, {"missing symmetry"});
  expect_bad_mtx(write_text("extra.mtx", "%%MatrixMarket matrix coordinate real general more\n1 1 1\n1 1 1\n"), 1,
                 {"unexpected text 'more' after the banner"});
}

TEST_F(IoTest, UnsupportedComplexHermitianAndVectorAreNamed) {
  const std::string complex = write_text("c.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n");
  expect_error<UnsupportedError>([&] { read_csr<double>(complex); }, {complex + ":1:", "field 'complex'"});
  const std::string hermitian = write_text("h.mtx", "%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n");
  expect_error<UnsupportedError>([&] { read_csr<double>(hermitian); }, {hermitian + ":1:", "symmetry 'hermitian'"});
  const std::string vector = write_text("v.mtx", "%%MatrixMarket vector coordinate real general\n1 1\n1 1\n");
  expect_error<UnsupportedError>([&] { read_csr<double>(vector); }, {vector + ":1:", "object 'vector'"});
}

TEST_F(IoTest, UnknownFormatFieldSymmetryAreInvalid) {
  expect_bad_mtx(write_text("f.mtx", "%%MatrixMarket matrix coordinat real general\n1 1 1\n1 1 1\n"), 1, {"unknown format 'coordinat'"});
  expect_bad_mtx(write_text("d.mtx", "%%MatrixMarket matrix coordinate double general\n1 1 1\n1 1 1\n"), 1, {"unknown field 'double'"});
  expect_bad_mtx(write_text("s.mtx", "%%MatrixMarket matrix coordinate real lower\n1 1 1\n1 1 1\n"), 1, {"unknown symmetry 'lower'"});
  expect_bad_mtx(write_text("ps.mtx", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n"), 1, {"pattern", "skew-symmetric"});
  expect_bad_mtx(write_text("pa.mtx", "%%MatrixMarket matrix array pattern general\n1 1\n1\n"), 1, {"array", "'pattern'"});
}

TEST_F(IoTest, MalformedSizeLine) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n% comment\n";
  expect_bad_mtx(write_text("a.mtx", banner + "3 3\n1 1 1\n"), 3, {"missing entry count"});
  expect_bad_mtx(write_text("b.mtx", banner + "3 x 1\n1 1 1\n"), 3, {"non-numeric column count 'x'"});
  expect_bad_mtx(write_text("c.mtx", banner + "3 3 1 7\n1 1 1\n"), 3, {"unexpected text '7' after the size line"});
  expect_bad_mtx(write_text("d.mtx", banner + "-3 3 1\n1 1 1\n"), 3, {"row count -3 out of range"});
  expect_bad_mtx(write_text("e.mtx", banner + "% only comments\n"), 3, {"missing size line"});
  expect_bad_mtx(write_text("f.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n"), 2, {"must be square", "3x4"});
}

TEST_F(IoTest, SizesBeyondInt32AreRejected) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  expect_bad_mtx(write_text("rows.mtx", banner + "3000000000 3 1\n1 1 1\n"), 2, {"row count 3000000000 out of range [0, 2147483647]"});
  expect_bad_mtx(write_text("cols.mtx", banner + "3 3000000000 1\n1 1 1\n"), 2, {"column count 3000000000 out of range"});
  expect_bad_mtx(write_text("nnz.mtx", banner + "3 3 3000000000\n1 1 1\n"), 2, {"entry count 3000000000 out of range"});
  expect_bad_mtx(write_text("huge.mtx", banner + "99999999999999999999 3 1\n1 1 1\n"), 2, {"row count '99999999999999999999' out of range"});
  expect_bad_mtx(write_text("big.smtx", "3000000000, 2, 0\n0\n\n"), 1, {"row count 3000000000 out of range"});
}

TEST_F(IoTest, TooFewEntries) {
  expect_bad_mtx(write_text("few.mtx", "%%MatrixMarket matrix coordinate real general\n4 4 3\n1 1 1\n2 2 2\n"), 4,
                 {"file ends after 2 entries, fewer than the 3 declared", "(line 2)"});
}

TEST_F(IoTest, TooManyEntries) {
  expect_bad_mtx(write_text("many.mtx", "%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 1\n2 2 2\n3 3 3\n"), 5,
                 {"more entries than the 2 declared"});
}

TEST_F(IoTest, IndexZeroOrBeyondTheSize) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n";
  expect_bad_mtx(write_text("col0.mtx", banner + "2 0 1\n"), 4, {"column index 0 out of range [1, 4]"});
  expect_bad_mtx(write_text("row0.mtx", banner + "0 2 1\n"), 4, {"row index 0 out of range [1, 3]"});
  expect_bad_mtx(write_text("col5.mtx", banner + "2 5 1\n"), 4, {"column index 5 out of range [1, 4]"});
  expect_bad_mtx(write_text("row4.mtx", banner + "4 1 1\n"), 4, {"row index 4 out of range [1, 3]"});
}

TEST_F(IoTest, NonNumericIndexOrValue) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n3 3 1\n";
  expect_bad_mtx(write_text("i.mtx", banner + "1 x2 1.0\n"), 3, {"non-numeric column index 'x2'"});
  expect_bad_mtx(write_text("r.mtx", banner + "1.5 2 1.0\n"), 3, {"non-numeric row index '1.5'"});
  expect_bad_mtx(write_text("v.mtx", banner + "1 2 1.0abc\n"), 3, {"non-numeric value '1.0abc'"});
  expect_bad_mtx(write_text("m.mtx", banner + "1 2\n"), 3, {"missing value"});
  expect_bad_mtx(write_text("t.mtx", banner + "1 2 1.0 0.0\n"), 3, {"unexpected text '0.0' after the entry"});
  expect_bad_mtx(write_text("n.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 2.5\n"), 3,
                 {"non-numeric integer value '2.5'"});
}

TEST_F(IoTest, NanAndInfinityAreRejected) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n";
  expect_bad_mtx(write_text("nan.mtx", banner + "2 2 nan\n"), 4, {"value 'nan' is not a finite number"});
  expect_bad_mtx(write_text("inf.mtx", banner + "2 2 -inf\n"), 4, {"value '-inf' is not a finite number"});
  expect_bad_mtx(write_text("big.mtx", banner + "2 2 1e999\n"), 4, {"value '1e999' out of the range of double"});
}

TEST_F(IoTest, ValueOverflowingTheValueTypeIsRejected) {
  const std::string file = write_text("h.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 70000\n");
  expect_error<InvalidInputError>([&] { read_csr<half>(file); }, {file, "value 70000 overflows f16"});
  EXPECT_EQ(float(read_csr<bfloat16>(file).values[0]), 70144.0f);  // bfloat16 has float's range
}

TEST_F(IoTest, SymmetricStorageRules) {
  expect_bad_mtx(write_text("upper.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 2 1\n"), 3,
                 {"entry (1, 2) above the diagonal"});
  expect_bad_mtx(write_text("skewdiag.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n"), 4,
                 {"diagonal entry (2, 2) in a skew-symmetric file"});
}

TEST_F(IoTest, TruncatedGzipIsAnIoError) {
  std::string text = "%%MatrixMarket matrix coordinate real general\n200 200 200\n";
  for (int i = 1; i <= 200; ++i) text += std::to_string(i) + " " + std::to_string(201 - i) + " " + std::to_string(i * 0.25) + "\n";
  const std::string whole = read_bytes(write_gzip("whole.mtx.gz", text));
  for (std::size_t keep : {whole.size() - 4, whole.size() / 2, std::size_t(12)}) {
    const std::string cut = write_text("cut" + std::to_string(keep) + ".mtx.gz", whole.substr(0, keep));
    expect_error<IoError>([&] { read_csr<double>(cut); }, {cut, "truncated gzip"});
  }
  std::string corrupt = whole;
  corrupt[whole.size() / 2] = char(~corrupt[whole.size() / 2]);
  corrupt[whole.size() / 2 + 1] = char(~corrupt[whole.size() / 2 + 1]);
  const std::string bad = write_text("corrupt.mtx.gz", corrupt);
  expect_error<IoError>([&] { read_csr<double>(bad); }, {bad, "gzip"});
}

TEST_F(IoTest, EmptyFile) {
  const std::string empty = write_text("empty.mtx", "");
  expect_error<InvalidInputError>([&] { read_csr<double>(empty); }, {empty + ": empty file"});
  const std::string blank = write_text("blank.smtx", " \n\n");
  expect_error<InvalidInputError>([&] { read_csr<float>(blank); }, {blank + ": empty file"});
  const std::string gz = write_gzip("empty.mtx.gz", "");
  expect_error<InvalidInputError>([&] { read_csr<float>(gz); }, {gz + ": empty file"});
}

TEST_F(IoTest, NonexistentFileIsAnIoError) {
  const std::string missing = path("no_such_file.mtx");
  expect_error<IoError>([&] { read_csr<double>(missing); }, {"cannot open " + missing});
  expect_error<IoError>([&] { read_dense<double>(missing); }, {"cannot open " + missing});
}

TEST_F(IoTest, SmtxOffsetsNotMonotone) {
  expect_bad_mtx(write_text("m.smtx", "3, 4, 3\n0 2 1 3\n0 1 2\n"), 2, {"row offsets not monotone", "offset 2 is 1, after 2"});
  expect_bad_mtx(write_text("z.smtx", "3, 4, 3\n1 2 2 3\n0 1 2\n"), 2, {"first row offset 1 is not 0"});
}

TEST_F(IoTest, SmtxOffsetsCountWrong) {
  expect_bad_mtx(write_text("few.smtx", "3, 4, 3\n0 1 3\n0 1 2\n"), 2, {"found 3 row offsets, expected rows + 1 = 4"});
  expect_bad_mtx(write_text("many.smtx", "3, 4, 3\n0 1 2 3 3\n0 1 2\n"), 2, {"more than rows + 1 = 4 row offsets"});
}

TEST_F(IoTest, SmtxLastOffsetDiffersFromNnz) {
  expect_bad_mtx(write_text("last.smtx", "3, 4, 3\n0 1 2 2\n0 1 2\n"), 2, {"last row offset 2 differs from nnz 3"});
  expect_bad_mtx(write_text("over.smtx", "3, 4, 3\n0 1 2 5\n0 1 2\n"), 2, {"row offset 5 exceeds nnz 3"});
}

TEST_F(IoTest, SmtxColumnOutOfRangeOrRepeated) {
  expect_bad_mtx(write_text("col.smtx", "3, 4, 3\n0 1 2 3\n0 4 2\n"), 3, {"column index 4 out of range [0, 4)"});
  expect_bad_mtx(write_text("neg.smtx", "3, 4, 3\n0 1 2 3\n0 -1 2\n"), 3, {"column index -1 out of range [0, 4)"});
  expect_bad_mtx(write_text("rep.smtx", "2, 4, 3\n0 1 3\n0 2 2\n"), 3, {"column index 2 repeated in row 1"});
}

TEST_F(IoTest, SmtxColumnCountWrong) {
  expect_bad_mtx(write_text("few.smtx", "3, 4, 3\n0 1 2 3\n0 1\n"), 3, {"found 2 column indices, expected nnz = 3"});
  expect_bad_mtx(write_text("many.smtx", "3, 4, 3\n0 1 2 3\n0 1 2 3\n"), 3, {"more than nnz = 3 column indices"});
  expect_bad_mtx(write_text("missing.smtx", "3, 4, 3\n0 1 2 3\n"), 2, {"file ends before the column indices"});
  expect_bad_mtx(write_text("extra.smtx", "3, 4, 3\n0 1 2 3\n0 1 2\n7\n"), 4, {"unexpected text '7' after the column indices"});
}

TEST_F(IoTest, ArrayAndCoordinateAreNotMixedUp) {
  const std::string array = write_text("a.mtx", "%%MatrixMarket matrix array real general\n1 1\n1\n");
  expect_error<InvalidInputError>([&] { read_csr<double>(array); }, {array + ":2:", "read_dense"});
  const std::string coordinate = write_text("c.mtx", real_general);
  expect_error<InvalidInputError>([&] { read_dense<double>(coordinate); }, {coordinate + ":4:", "read_csr"});
  const std::string smtx = write_text("s.smtx", "1, 1, 1\n0 1\n0\n");
  expect_error<InvalidInputError>([&] { read_dense<double>(smtx); }, {smtx, "not a Matrix Market file"});
}

TEST_F(IoTest, MalformedArrayFiles) {
  const std::string banner = "%%MatrixMarket matrix array real general\n2 2\n";
  expect_bad_dense(write_text("few.mtx", banner + "1\n2\n3\n"), 5, {"file ends after 3 values, fewer than the 4"});
  expect_bad_dense(write_text("many.mtx", banner + "1\n2\n3\n4\n5\n"), 7, {"more values than the 4"});
  expect_bad_dense(write_text("nan.mtx", banner + "1\nNaN\n3\n4\n"), 4, {"value 'NaN' is not a finite number"});
  expect_bad_dense(write_text("size.mtx", "%%MatrixMarket matrix array real general\n2 2 4\n1\n2\n3\n4\n"), 2,
                 {"unexpected text '4' after the size line"});
}

// ---- good input ----

TEST_F(IoTest, RealGeneralSumsDuplicatesAndSortsRows) {
  MatrixInfo info;
  const Csr<double> csr = read_csr<double>(write_text("g.mtx", real_general), {}, &info);
  expect_csr(csr, 3, 4, {0, 2, 3, 4}, {0, 2, 1, 3}, {2.0, 2.5, 0.375, -2.0});
  EXPECT_EQ(info.format, "matrix-market");
  EXPECT_EQ(info.layout, "coordinate");
  EXPECT_EQ(info.field, "real");
  EXPECT_EQ(info.symmetry, "general");
  EXPECT_EQ(info.stored_entries, 5);
  EXPECT_FALSE(info.gzip);
  EXPECT_EQ(describe(info), "matrix-market coordinate real general 3x4, 5 stored entries");
}

TEST_F(IoTest, EveryValueTypeReadsTheSameExactValues) {
  const std::string file = write_text("g.mtx", real_general);
  const std::vector<int32_t> row_ptr{0, 2, 3, 4}, col_idx{0, 2, 1, 3};
  const std::vector<double> values{2.0, 2.5, 0.375, -2.0};  // exact in all four types
  expect_csr(read_csr<float>(file), 3, 4, row_ptr, col_idx, values);
  expect_csr(read_csr<half>(file), 3, 4, row_ptr, col_idx, values);
  expect_csr(read_csr<bfloat16>(file), 3, 4, row_ptr, col_idx, values);
}

TEST_F(IoTest, IntegerAndPatternGeneral) {
  const Csr<double> integer = read_csr<double>(write_text(
      "i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 3 3\n2 3 -7\n1 2 +4\n2 1 12\n"));
  expect_csr(integer, 2, 3, {0, 1, 3}, {1, 0, 2}, {4, 12, -7});
  const Csr<double> pattern = read_csr<double>(write_text(
      "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 3 3\n2 3\n1 2\n2 1\n"));
  expect_csr(pattern, 2, 3, {0, 1, 3}, {1, 0, 2}, {1, 1, 1});
}

TEST_F(IoTest, SymmetricExpandsOrKeepsTheTriangle) {
  const std::string file = write_text("s.mtx",
      "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 2\n2 1 -1\n3 2 5\n3 3 7\n");
  expect_csr(read_csr<double>(file), 3, 3, {0, 2, 4, 6}, {0, 1, 0, 2, 1, 2}, {2, -1, -1, 5, 5, 7});
  ReadOptions keep;
  keep.expand_symmetric = false;
  MatrixInfo info;
  expect_csr(read_csr<double>(file, keep, &info), 3, 3, {0, 1, 2, 4}, {0, 0, 1, 2}, {2, -1, 5, 7});
  EXPECT_EQ(info.symmetry, "symmetric");
  EXPECT_EQ(info.stored_entries, 4);
}

TEST_F(IoTest, IntegerAndPatternSymmetric) {
  expect_csr(read_csr<double>(write_text("i.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n2 2 2\n2 1 3\n2 2 -4\n")),
             2, 2, {0, 1, 3}, {1, 0, 1}, {3, 3, -4});
  expect_csr(read_csr<double>(write_text("p.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n3 1\n2 2\n")),
             3, 3, {0, 1, 2, 3}, {2, 1, 0}, {1, 1, 1});
}

TEST_F(IoTest, SkewSymmetricNegatesTheMirror) {
  expect_csr(read_csr<double>(write_text("r.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3.5\n3 1 -4\n")),
             3, 3, {0, 2, 3, 4}, {1, 2, 0, 0}, {-3.5, 4, 3.5, -4});
  expect_csr(read_csr<double>(write_text("i.mtx", "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 6\n")),
             2, 2, {0, 1, 2}, {1, 0}, {-6, 6});
}

TEST_F(IoTest, CrlfAndTabsAreAccepted) {
  const Csr<double> csr = read_csr<double>(write_text(
      "w.mtx", "%%MatrixMarket matrix coordinate real general\r\n2 2 2\r\n1\t2\t0.5\r\n2 1 -1 \r\n"));
  expect_csr(csr, 2, 2, {0, 1, 2}, {1, 0}, {0.5, -1});
}

TEST_F(IoTest, SmtxReadsAsPatternCsr) {
  MatrixInfo info;
  const Csr<float> csr = read_csr<float>(write_text("m.smtx", "3, 4, 4\n0 2 2 4 \n3 1 0 3 \n"), {}, &info);
  expect_csr(csr, 3, 4, {0, 2, 2, 4}, {1, 3, 0, 3}, {1, 1, 1, 1});
  EXPECT_EQ(info.format, "smtx");
  EXPECT_EQ(info.field, "pattern");
  EXPECT_EQ(info.stored_entries, 4);
  expect_csr(read_csr<float>(write_text("e.smtx", "2, 5, 0\n0 0 0\n")), 2, 5, {0, 0, 0}, {}, {});
}

TEST_F(IoTest, RandomPatternValuesAreSeededAndInRange) {
  std::string text = "%%MatrixMarket matrix coordinate pattern symmetric\n60 60 600\n";
  std::mt19937 rng(7);
  for (int e = 0; e < 600; ++e) {
    const int r = 1 + int(rng() % 60), c = 1 + int(rng() % 60);
    text += std::to_string(std::max(r, c)) + " " + std::to_string(std::min(r, c)) + "\n";
  }
  const std::string file = write_text("p.mtx", text);
  ReadOptions random;
  random.pattern_values = PatternValues::Random;
  random.seed = 42;
  const Csr<double> a = read_csr<double>(file, random), b = read_csr<double>(file, random);
  random.seed = 43;
  const Csr<double> c = read_csr<double>(file, random);
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.col_idx, c.col_idx);
  EXPECT_NE(a.values, c.values);
  std::map<std::pair<int, int>, double> entries;
  for (int32_t r = 0; r < a.rows; ++r)
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) entries[{r, a.col_idx[e]}] = a.values[e];
  for (const auto& [at, v] : entries) {
    EXPECT_GE(v, -2.0);  // a repeated stored entry sums two values, each in [-1, 1]
    EXPECT_LE(v, 2.0);
    EXPECT_EQ(v, entries.at({at.second, at.first})) << "not symmetric at " << at.first << "," << at.second;
  }
  const Csr<double> smtx = read_csr<double>(write_text("r.smtx", "2, 3, 4\n0 2 4\n0 2 1 2\n"), random);
  for (double v : smtx.values) {
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
  }
  EXPECT_NE(smtx.values[0], smtx.values[1]);
}

TEST_F(IoTest, RandomValuesCoverTheInterval) {
  std::string text = "%%MatrixMarket matrix coordinate pattern general\n100 100 10000\n";
  for (int r = 1; r <= 100; ++r)
    for (int c = 1; c <= 100; ++c) text += std::to_string(r) + " " + std::to_string(c) + "\n";
  ReadOptions random;
  random.pattern_values = PatternValues::Random;
  random.seed = test::fresh_seed();
  const Csr<double> csr = read_csr<double>(write_text("p.mtx", text), random);
  double lowest = 1, highest = -1, sum = 0;
  for (double v : csr.values) {
    ASSERT_GE(v, -1.0) << "seed " << random.seed;
    ASSERT_LE(v, 1.0) << "seed " << random.seed;
    lowest = std::min(lowest, v);
    highest = std::max(highest, v);
    sum += v;
  }
  EXPECT_LT(lowest, -0.99) << "seed " << random.seed;
  EXPECT_GT(highest, 0.99) << "seed " << random.seed;
  EXPECT_LT(std::abs(sum / 10000), 0.05) << "seed " << random.seed;  // mean 0, sd of the mean ~0.006
}

TEST_F(IoTest, ArrayGeneralIsColumnMajorInTheFile) {
  MatrixInfo info;
  const Dense<double> d = read_dense<double>(write_text(
      "a.mtx", "%%MatrixMarket matrix array real general\n% comment\n2 3\n1\n4\n2\n5\n3.5\n-6\n"), &info);
  ASSERT_EQ(d.rows, 2);
  ASSERT_EQ(d.cols, 3);
  EXPECT_EQ(d.data, (std::vector<double>{1, 2, 3.5, 4, 5, -6}));
  EXPECT_EQ(info.layout, "array");
  EXPECT_EQ(info.stored_entries, 6);
  const Dense<half> h = read_dense<half>(write_text("i.mtx", "%%MatrixMarket matrix array integer general\n1 2\n7\n-3\n"));
  EXPECT_EQ(float(h.at(0, 0)), 7.0f);
  EXPECT_EQ(float(h.at(0, 1)), -3.0f);
}

TEST_F(IoTest, ArraySymmetricAndSkewFillBothTriangles) {
  const Dense<double> s = read_dense<double>(write_text(
      "s.mtx", "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n"));
  EXPECT_EQ(s.data, (std::vector<double>{1, 2, 3, 2, 4, 5, 3, 5, 6}));
  const Dense<float> k = read_dense<float>(write_text(
      "k.mtx", "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n"));
  EXPECT_EQ(k.data, (std::vector<float>{0, -1, -2, 1, 0, -3, 2, 3, 0}));
}

Csr<double> random_csr(int32_t rows, int32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1e6, 1e6);
  Csr<double> csr;
  csr.rows = rows;
  csr.cols = cols;
  for (int32_t r = 0; r < rows; ++r) {
    for (int32_t c = 0; c < cols; ++c)
      if (rng() % 5 == 0) {
        csr.col_idx.push_back(c);
        csr.values.push_back(value(rng) * std::pow(10.0, double(rng() % 40) - 20));
      }
    csr.row_ptr.push_back(int32_t(csr.col_idx.size()));
  }
  return csr;
}

TEST_F(IoTest, CoordinateRoundTripIsExact) {
  const uint64_t seed = test::fresh_seed();
  const Csr<double> original = random_csr(37, 53, seed);
  const std::string file = path("round.mtx");
  write_matrix_market(file, original);
  const Csr<double> back = read_csr<double>(file);
  EXPECT_EQ(back.rows, original.rows);
  EXPECT_EQ(back.cols, original.cols);
  EXPECT_EQ(back.row_ptr, original.row_ptr) << "seed " << seed;
  EXPECT_EQ(back.col_idx, original.col_idx) << "seed " << seed;
  EXPECT_EQ(back.values, original.values) << "seed " << seed;

  const Csr<float> single = cast<float>(original);
  write_matrix_market(file, single);  // replaces the file
  EXPECT_EQ(read_csr<float>(file).values, single.values) << "seed " << seed;
  Csr<half> small = cast<half>(random_csr(9, 9, seed + 1));
  std::mt19937 rng{uint32_t(seed)};
  for (half& v : small.values) v = half(std::uniform_real_distribution<float>(-1000, 1000)(rng));
  write_matrix_market(file, small);
  const Csr<half> small_back = read_csr<half>(file);
  ASSERT_EQ(small_back.values.size(), small.values.size());
  for (std::size_t i = 0; i < small.values.size(); ++i) EXPECT_EQ(small_back.values[i].bits, small.values[i].bits);
}

TEST_F(IoTest, DenseRoundTripIsExact) {
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Dense<double> original(5, 7);
  for (double& v : original.data) v = normal(rng);
  const std::string file = path("dense.mtx");
  write_matrix_market(file, original);
  const Dense<double> back = read_dense<double>(file);
  EXPECT_EQ(back.rows, 5);
  EXPECT_EQ(back.cols, 7);
  EXPECT_EQ(back.data, original.data) << "seed " << seed;
}

TEST_F(IoTest, FailedWriteLeavesTheTargetAndNoTemporary) {
  const std::string file = path("keep.mtx");
  const Csr<double> good = random_csr(4, 4, 1);
  write_matrix_market(file, good);
  const std::string before = read_bytes(file);
  Csr<double> broken = good;
  broken.values.back() = std::nan("");
  expect_error<InvalidInputError>([&] { write_matrix_market(file, broken); }, {"cannot write " + file, "not a finite number"});
  Csr<double> bad_index = good;
  bad_index.col_idx.back() = 9;
  expect_error<InvalidInputError>([&] { write_matrix_market(file, bad_index); }, {"cannot write " + file, "column index 9"});
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temporaries left
  const std::string nowhere = path("no_dir/x.mtx");
  expect_error<IoError>([&] { write_matrix_market(nowhere, good); }, {nowhere});
}

TEST_F(IoTest, WriteThroughSymlinkReplacesItsTarget) {
  const std::string real = path("real.mtx"), link = path("link.mtx");
  write_matrix_market(real, random_csr(3, 3, 1));
  fs::create_symlink(real, link);
  const Csr<double> second = random_csr(5, 2, 2);
  write_matrix_market(link, second);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_csr<double>(real).values, second.values);
}

TEST_F(IoTest, NonRegularTargetIsWrittenInPlaceNotReplaced) {
  const std::string fifo = path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_bytes(fifo); });
  Dense<double> dense(1, 2);
  dense.data = {0.5, -3};
  write_matrix_market(fifo, dense);
  reader.join();
  EXPECT_EQ(received, "%%MatrixMarket matrix array real general\n1 2\n0.5\n-3\n");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
}

TEST_F(IoTest, GzipIsDetectedByContentNotName) {
  const std::string plain = write_text("plain.mtx", real_general);
  const std::string gz = write_gzip("zipped_without_suffix.mtx", real_general);
  const std::string fake = write_text("not_zipped.mtx.gz", real_general);
  MatrixInfo plain_info, gz_info, fake_info;
  const Csr<double> a = read_csr<double>(plain, {}, &plain_info);
  const Csr<double> b = read_csr<double>(gz, {}, &gz_info);
  const Csr<double> c = read_csr<double>(fake, {}, &fake_info);
  EXPECT_FALSE(plain_info.gzip);
  EXPECT_TRUE(gz_info.gzip);
  EXPECT_FALSE(fake_info.gzip);
  for (const Csr<double>* other : {&b, &c}) {
    EXPECT_EQ(other->row_ptr, a.row_ptr);
    EXPECT_EQ(other->col_idx, a.col_idx);
    EXPECT_EQ(other->values, a.values);
  }
  // gzip allows several members one after another; they read as one text.
  const std::string text(real_general);
  const std::string split = write_text("members.mtx.gz", read_bytes(write_gzip("m1.gz", text.substr(0, 100))) +
                                                             read_bytes(write_gzip("m2.gz", text.substr(100))));
  EXPECT_EQ(read_csr<double>(split).values, a.values);
}

// ---- the shared matrices ----

struct HeaderSizes {
  int64_t rows = 0, cols = 0, entries = 0;
  bool symmetric = false;
};

// The size line read independently of the library: zlib's gzgets reads plain and gzip alike.
HeaderSizes header_sizes(const std::string& file) {
  HeaderSizes sizes;
  gzFile in = gzopen(file.c_str(), "rb");
  EXPECT_NE(in, nullptr) << file;
  char line[4096];
  bool first = true;
  while (gzgets(in, line, sizeof line)) {
    const std::string text(line);
    if (first && text.rfind("%%MatrixMarket", 0) == 0)
      sizes.symmetric = text.find("symmetric") != std::string::npos;
    first = false;
    if (text[0] == '%') continue;
    std::string size_line = text;
    for (char& ch : size_line) ch = ch == ',' ? ' ' : ch;
    std::istringstream(size_line) >> sizes.rows >> sizes.cols >> sizes.entries;
    break;
  }
  gzclose(in);
  return sizes;
}

// Issue 27's reproducers: a header is not trusted with memory. 2^30 declared rows with one
// entry took 8.6 GB; now the reader refuses before building the row offsets, naming the
// count, the entries and the limit.
TEST_F(IoTest, DeclaredRowsFarBeyondTheEntriesAreRefused) {
  const std::string file = write_text("huge.mtx", "%%MatrixMarket matrix coordinate real general\n1073741824 3 1\n1 1 1.0\n");
  expect_error<InvalidInputError>([&] { read_csr<double>(file); },
                                  {file, "1073741824 declared rows", "1 stored entries", "16777216"});
  const std::string near_int32 =
      write_text("near.mtx", "%%MatrixMarket matrix coordinate pattern general\n2147483641 2147483641 1\n1 1\n");
  expect_error<InvalidInputError>([&] { read_csr<float>(near_int32); }, {near_int32, "2147483641 declared rows"});
  const std::string wide = write_text("wide.smtx", "1, 1073741824, 1\n0 1\n5\n");
  expect_error<InvalidInputError>([&] { read_csr<float>(wide); }, {wide, "1073741824 declared columns"});
}

TEST_F(IoTest, DeclaredSizesWithinTheLimitsRead) {
  // 2^24 rows are allowed with a single entry, and more rows with enough entries.
  const std::string file = write_text("tall.mtx", "%%MatrixMarket matrix coordinate real general\n16777216 2 1\n16777216 2 4.5\n");
  const Csr<double> a = read_csr<double>(file);
  EXPECT_EQ(a.rows, 16777216);
  EXPECT_EQ(a.row_ptr.back(), 1);
  EXPECT_EQ(a.col_idx, std::vector<int32_t>{1});
  ReadOptions small;
  small.limits.max_dimension = 8;
  const std::string sixteen = write_text("sixteen.mtx", "%%MatrixMarket matrix coordinate real general\n17 17 1\n1 1 1\n");
  expect_error<InvalidInputError>([&] { read_csr<double>(sixteen, small); }, {"17 declared rows", "= 16"});
  small.limits.max_dimension = 0;  // off
  EXPECT_EQ(read_csr<double>(sixteen, small).rows, 17);
}

// A 970 KB gzip of blank lines inflated to 2 GB. The limit is max(max_inflated_bytes, 64 x
// compressed size); the reader holds at most one byte past it.
TEST_F(IoTest, GzipInflatingPastTheLimitIsRefused) {
  const std::string blank_lines(8 << 20, '\n');
  const std::string file = write_gzip("blank.mtx.gz", "%%MatrixMarket matrix coordinate real general\n" + blank_lines);
  ASSERT_LT(fs::file_size(file), 64u << 10);
  ReadOptions limited;
  limited.limits.max_inflated_bytes = 1 << 20;
  expect_error<InvalidInputError>([&] { read_csr<double>(file, limited); },
                                  {file, "inflates past 1048576 bytes", "max_inflated_bytes 1048576"});
  expect_error<InvalidInputError>([&] { read_dense<double>(file, nullptr, limited.limits); }, {"inflates past"});
  // Within the default limit the same file is only missing its size line.
  expect_error<InvalidInputError>([&] { read_csr<double>(file); }, {"missing size line"});
}

TEST_F(IoTest, Utf8ByteOrderMarkIsSkipped) {
  const std::string file = write_text("bom.mtx", "\xef\xbb\xbf%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 3.5\n");
  expect_csr(read_csr<double>(file), 2, 2, {0, 0, 1}, {0}, {3.5});
  const std::string smtx = write_text("bom.smtx", "\xef\xbb\xbf" "2, 2, 1\n0 1 1\n1\n");
  expect_csr(read_csr<double>(smtx), 2, 2, {0, 1, 1}, {1}, {1.0});
}

// File content quoted in a message is printable ASCII: a NUL or a binary byte is written as
// \xNN.
TEST_F(IoTest, MessagesEscapeControlAndBinaryBytes) {
  static const char kText[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 4\x00\x9f\n";
  const std::string file = write_text("nul.mtx", std::string(kText, sizeof kText - 1));
  try {
    read_csr<double>(file);
    ADD_FAILURE() << "no exception";
  } catch (const InvalidInputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'4\\x00\\x9f'"), std::string::npos) << message;
    for (const char c : message) EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) << message;
  }
  const std::string keyword = write_text("kw.mtx", "%%MatrixMarket matrix coordinate complex\x01 general\n");
  expect_error<InvalidInputError>([&] { read_csr<double>(keyword); }, {"'complex\\x01'"});
}

TEST(IoSharedMatrices, EveryFileReadsToItsHeaderSizes) {
  const std::vector<std::string> files = test::shared_matrix_files();
  if (files.empty()) GTEST_SKIP() << "no shared matrices under " << test::shared_matrices_dir();
  // Expanded counts from SOURCES.md.
  const std::map<std::string, int64_t> expanded_nnz{
      {"bcsstk13.mtx.gz", 83883}, {"bcsstk28.mtx.gz", 219024}, {"cyl6.mtx.gz", 714241},
      {"pubmed.mtx.gz", 88651},   {"citeseer.mtx.gz", 9228},   {"Groebner_id2003_aug.mtx.gz", 173670}};
  int checked_by_value = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const HeaderSizes header = header_sizes(file);
    ReadOptions stored_only;
    stored_only.expand_symmetric = false;
    MatrixInfo info;
    const Csr<float> stored = read_csr<float>(file, stored_only, &info);
    EXPECT_EQ(stored.rows, header.rows);
    EXPECT_EQ(stored.cols, header.cols);
    EXPECT_EQ(info.stored_entries, header.entries);
    EXPECT_EQ(stored.nnz(), header.entries);  // none of these files repeats an entry
    EXPECT_EQ(info.symmetry == "symmetric", header.symmetric);
    EXPECT_TRUE(info.gzip);
    EXPECT_NO_THROW(validate(stored));

    const Csr<float> full = read_csr<float>(file);
    int64_t diagonal = 0;
    for (int32_t r = 0; r < stored.rows; ++r)
      for (int32_t e = stored.row_ptr[r]; e < stored.row_ptr[r + 1]; ++e) diagonal += stored.col_idx[e] == r;
    EXPECT_EQ(full.nnz(), header.symmetric ? 2 * header.entries - diagonal : header.entries);
    EXPECT_NO_THROW(validate(full));
    const auto known = expanded_nnz.find(fs::path(file).filename().string());
    if (known != expanded_nnz.end()) {
      EXPECT_EQ(full.nnz(), known->second);
      ++checked_by_value;
    }
  }
  EXPECT_GE(checked_by_value, 3);
}

TEST(IoSharedMatrices, LargestMatrixReadsQuickly) {
  const std::string file = test::shared_matrices_dir() + "/sinc18.mtx.gz";
  if (!fs::exists(file)) GTEST_SKIP() << file << " absent";
  const auto start = std::chrono::steady_clock::now();
  const Csr<double> csr = read_csr<double>(file);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(csr.nnz(), 948696);
  std::printf("sinc18.mtx.gz (948696 entries) read in %.3f s\n", seconds);
#ifdef NDEBUG
  EXPECT_LT(seconds, 2.0);  // about 0.3 s when the machine is idle; slack for shared CI cores
#endif
}

}  // namespace
}  // namespace sparsejit::io
