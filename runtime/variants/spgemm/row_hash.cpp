// row_hash: Gustavson's row-by-row product with a hash table per row of C, rows binned by their
// work into kernels sized for each bin (the approach of nsparse, spECK and OpSparse, written
// here; templates/spgemm_hash_bin.cu and spgemm_hash_rows.cu). One call:
//   scratch      one stream-ordered block from the runtime's pool (bins, counts, tables, scan)
//   symbolic     a binning kernel (each row's products p; bin by max(min(p, n), p /
//                kSlotProducts): the most columns the row can have, and its work; rows without
//                products get count 0), then per bin a kernel counting each row's distinct
//                columns in a table of 2 x the bin's limit slots (shared memory), or, for the
//                rows past the largest shared bin, of the smallest power of two >= 2 min(p, n)
//                slots in global memory (a few blocks that loop over the rows, their tables
//                reused row by row). The dense bin (B's rows sorted): a long row (key past
//                kDenseMinKey) whose columns lie within dense_span columns, at most
//                kDenseSpanPerProduct of them per product (or whose key passes every shared
//                bin), is counted in a bitmap of its span instead (spgemm_dense_rows.cu)
//   scan         CUB's exclusive scan: the counts become C's row offsets
//   numeric bins the rows binned again by max(nnz, p / kSlotProducts): the table holds the
//                row's nnz columns and the group has threads for its work
//   sync         the one synchronization: NNZ(C) and the numeric bins' sizes come to the host;
//                C's columns and values are allocated
//   numeric      per bin: the products added into the table (in the value type), the row sorted
//                by column (bitonic, the occupied slots only) and written to C; dense rows add
//                into a dense array of their span (dense_window columns at a time, a pass
//                over the row's products per window, where the span's sums do not fit one
//                block's shared memory) and are written in column order, unsorted
// The bins' kernels read their row counts on the device, so a launch is sized by the bin's
// capacity (from the features) and the one synchronization is the only one.
// panels > 1 (the planner's, when one pass does not fit the call's memory): the symbolic pass
// runs panel by panel of A's rows over one panel-sized scratch, C stays one array (see
// panel_rows below).
// Every column the patterns produce is kept, a sum that cancels to zero included (the
// reference's structural product). f32 accumulates in f32 (atomic adds in the table: the order
// of a row's additions varies from run to run, so results may differ in the last bits); f64 in f64.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spgemm_scan.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::variants::spgemm {

namespace {

// A bin: rows whose key is at most `limit` (and above the previous bin's), a group of
// group_threads threads per row, block_threads per block. Its tables have 2 x limit slots, so
// they are at most half full. A key bounds the row's products too (at most kSlotProducts x
// limit; at most limit while B is wider than that), and group_threads grows with the limit:
// 2 to 4 products per thread and pass for such rows, kSlotProducts times that at most.
// Groups of more than 32 threads are whole blocks (they synchronize with __syncthreads).
struct Bin {
  int limit;
  int group_threads;
  int block_threads;
};
constexpr std::array<Bin, 5> kBins = {{{16, 8, 256}, {64, 32, 256}, {256, 32, 256}, {1024, 256, 256}, {4096, 1024, 1024}}};
constexpr int kMaxSharedBins = int(kBins.size());
// The rows past the largest shared bin: a block each (tables in global memory).
constexpr Bin kGlobalBin = {0, 1024, 1024};
// Products one table slot is given in a key, max(columns bound, ceil(products / this)): the
// key bounds a row's work as well as its table.
constexpr int kSlotProducts = 8;
constexpr int kBinThreads = 256;
// Rows whose symbolic key passes this (those of the bins past 256 columns) may go dense: their
// span is cleared and read once per row, which pays against hashing and sorting only for rows
// with that many columns or products.
constexpr int kDenseMinKey = 256;
// ... and whose span is at most this many columns per product, while a shared bin could hash
// them: a dense row clears and reads its whole span (once per window), a hashed one works per
// product and per column it finds, so a row spread thinly over many columns is hashed.
// Measured on the H200 (bench/results/2026-12-02-h200-spgemm-dense-span), forced dense against
// hashed: dense 1.2-2x faster up to 25 columns a product; from 18 to 50 the winner depends on
// how many products repeat a column (rows of 400 products and no repeats: dense 1.16x faster
// at 50; rows of 1,089 products over 30 times fewer columns: hashed 1.2-2.2x faster at 18-46);
// hashed 1.6-14x faster from about 90 on. At 32 two real graphs lost 14-18%; at 64 only rows
// that hashing clearly wins leave the dense bin.
constexpr int kDenseSpanPerProduct = 64;
// The dense bin's index: after the shared bins and the global one.
constexpr int kBinSlots = kMaxSharedBins + 2;
// The global tables of all blocks together stay within this (fewer blocks when the widest
// row's table is large); at least one block runs whatever its table needs.
constexpr double kGlobalTableBudget = double(512LL << 20);
// The dense bin's blocks loop over its rows past this many (one row each below it).
constexpr int kDenseMaxBlocks = 65535;
// Device scratch is cut into pieces at this alignment.
constexpr std::size_t kAlign = 256;

int bin_count(const nlohmann::json& params) {
  const int limit = params.at("max_shared_row").get<int>();
  for (int b = 0; b < kMaxSharedBins; ++b)
    if (kBins[std::size_t(b)].limit == limit) return b + 1;
  std::string known;
  for (const Bin& bin : kBins) known += (known.empty() ? "" : ", ") + std::to_string(bin.limit);
  throw InvalidInputError("row_hash: max_shared_row = " + std::to_string(limit) + " is not a bin limit (" + known + ")");
}

int acc_bytes(DType dtype) { return int(size_of(dtype)); }

// Dynamic shared memory of one block (the layout of spgemm_hash_rows.cu).
int64_t shared_bytes(const Bin& bin, bool numeric, bool shared_table, int acc) {
  const int64_t groups = bin.block_threads / bin.group_threads;
  const int64_t key_slots = shared_table ? 2 * bin.limit : 0;
  const int64_t acc_slots = numeric && shared_table ? 2 * bin.limit : 0;
  const int64_t aval_slots = numeric ? bin.group_threads : 0;
  return acc * groups * (acc_slots + aval_slots) + 4 * (groups * (key_slots + 2 * bin.group_threads + 2) + 32);
}

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

// How a call's rows fall into the bins, from the features' product buckets.
struct BinCounts {
  int bins = 0;                             // shared bins (the global one is index bins, dense bins + 1)
  int dense_span = 0;                       // the dense bin's span (0: off)
  int dense_window = 0;                     // the columns its numeric pass sums at a time
  std::array<int64_t, kBinSlots> symbolic{};  // most rows a symbolic bin can get (exact without dense)
  std::array<int64_t, kBinSlots> capacity{};  // most rows a numeric bin can get
  int64_t global_products = 0;              // products of the global bin's rows (at most)
  int64_t table_slots = 0;                  // a global table's slots (0 without global rows)
  int dense() const { return bins + 1; }
};

// The symbolic key max(min(p, n), ceil(p / kSlotProducts)) grows with p, so a row's key is at
// most a bin's limit L exactly when p is at most L (L < n) or kSlotProducts * L (L >= n): a
// power of two, which the features' buckets count exactly.
int64_t products_limit(int limit, int32_t n) { return limit < n ? int64_t(limit) : int64_t(kSlotProducts) * limit; }

BinCounts bin_counts(const SpgemmFeatures& f, int32_t n, int bins, int dense_span, int dense_window) {
  BinCounts c;
  c.bins = bins;
  c.dense_span = dense_span;
  c.dense_window = dense_span > 0 && dense_window > 0 ? std::min(dense_window, dense_span) : dense_span;
  int64_t below = 0;  // rows in the bins before
  for (int b = 0; b < bins; ++b) {
    const int64_t up_to = rows_with_products_up_to(f, products_limit(kBins[std::size_t(b)].limit, n));
    c.symbolic[std::size_t(b)] = up_to - below;
    // A row's numeric key (nnz <= min(p, n)) exceeds the previous limit only if its symbolic
    // key does: numeric bin b holds at most the rows of symbolic bins b and above.
    c.capacity[std::size_t(b)] = f.product_rows - below;
    below = up_to;
  }
  c.symbolic[std::size_t(bins)] = f.product_rows - below;
  c.capacity[std::size_t(bins)] = c.symbolic[std::size_t(bins)];
  c.global_products = f.products - products_of_rows_up_to(f, products_limit(kBins[std::size_t(bins - 1)].limit, n));
  if (dense_span > 0) {
    const int64_t long_rows = f.product_rows - rows_with_products_up_to(f, products_limit(kDenseMinKey, n));
    c.symbolic[std::size_t(c.dense())] = c.capacity[std::size_t(c.dense())] = long_rows;
    if (f.max_row_span <= dense_span) {
      // Every row past the last shared bin goes dense, so the global bin stays empty. When no
      // span passes kDenseSpanPerProduct times a long row's fewest products, every long row
      // does: a row left hashed has a symbolic key, and so a numeric key, of at most
      // kDenseMinKey, so the bins whose keys all pass it (the previous bin's limit at least
      // kDenseMinKey) stay empty too.
      const bool all_long_dense = f.max_row_span <= kDenseSpanPerProduct * (products_limit(kDenseMinKey, n) + 1);
      for (int b = 1; b <= bins; ++b) {
        if (kBins[std::size_t(b - 1)].limit < kDenseMinKey || (b < bins && !all_long_dense)) continue;
        c.symbolic[std::size_t(b)] = c.capacity[std::size_t(b)] = 0;
        if (b == bins) c.global_products = 0;
      }
    }
  }
  if (c.symbolic[std::size_t(bins)] > 0) c.table_slots = pow2_at_least(2 * std::min<int64_t>(f.max_row_products, n));
  return c;
}

// The same from a decision's recorded features (explain's kernel list).
SpgemmFeatures bucket_features(const nlohmann::json& values) {
  SpgemmFeatures f;
  const auto rows = values.at("rows_by_products").get<std::vector<int64_t>>();
  const auto products = values.at("products_by_bucket").get<std::vector<int64_t>>();
  for (std::size_t i = 0; i < rows.size() && i < f.rows_by_products.size(); ++i) {
    f.rows_by_products[i] = rows[i];
    f.products_by_bucket[i] = i < products.size() ? products[i] : 0;
  }
  f.products = values.at("products").get<int64_t>();
  f.product_rows = values.at("product_rows").get<int64_t>();
  f.max_row_products = values.at("max_row_products").get<int64_t>();
  f.max_row_span = values.at("max_row_span").get<int64_t>();
  return f;
}

std::string limits_text(int bins) {
  std::string text;
  for (int b = 0; b < bins; ++b) text += (b ? ", " : "") + std::to_string(kBins[std::size_t(b)].limit);
  return text;
}

jit::KernelSpec bin_spec(bool symbolic, int bins, int dense_span) {
  const std::string name = std::string("sj_spgemm_hash_bin_") + (symbolic ? "symbolic" : "numeric");
  return {"spgemm_hash_bin.cu", name,
          {{"symbolic", symbolic}, {"shared_bins", bins}, {"limits", limits_text(bins)}, {"slot_products", kSlotProducts},
           {"block_threads", kBinThreads}, {"dense", dense_span > 0}, {"dense_min_key", kDenseMinKey}, {"dense_span", dense_span},
           {"span_per_product", kDenseSpanPerProduct}},
          {}};
}

// The dense bin's block: a whole row per block; the widest spans (one block per multiprocessor
// in the numeric pass, for its shared memory) get the most threads.
int dense_block_threads(int span) { return span >= 16384 ? 1024 : 512; }

// Dynamic shared memory of a dense block (the layout of spgemm_dense_rows.cu): the numeric pass
// sums `window` columns at a time next to the bitmap of the whole span.
int64_t dense_shared_bytes(int span, int window, bool numeric, int acc) {
  const int64_t block = dense_block_threads(span);
  return acc * ((numeric ? window : 0) + block) + 4 * (span / 32) + 4 * (2 * block + 32 + 1);
}

// Dense spans are multiples of 32 columns (bitmap words); the planner's are powers of two up
// to kDenseGranule and multiples of it above, so few distinct kernels are compiled.
constexpr int kDenseGranule = 1024;
// A span wider than one window of sums fits is summed in up to this many windows, each a pass
// over the row's products: a wide row still needs no hashing (f64 rows of 36,692 columns hashed
// in global memory made email-Enron's f64 product slower than cuSPARSE's; at 4 windows, f64 rows
// of an R-MAT's 100,000 columns stayed hashed, 111 ms against 13 ms in f32; at 8, f64 rows of
// 200,000 columns took global tables, 293 ms against 78 in 9 windows on the H200). A window
// pass costs about 0.015 ns a product and a global table's insertions 0.4: at 16 passes the
// windows still win.
constexpr int kMaxDenseWindows = 16;

// The columns the numeric pass of a span sums at a time: the whole span when it fits a block's
// shared memory, else the widest multiple of kDenseGranule that fits beside the span's bitmap
// (0 when not even one granule does).
int dense_window(int span, int acc, const plan::DeviceTarget& device) {
  if (dense_shared_bytes(span, span, true, acc) <= device.shared_per_block_optin) return span;
  int window = 0;
  while (window + kDenseGranule < span && dense_shared_bytes(span, window + kDenseGranule, true, acc) <= device.shared_per_block_optin)
    window += kDenseGranule;
  return window;
}

int dense_windows(int span, int window) { return window > 0 ? (span + window - 1) / window : 0; }

// The widest dense span (a multiple of kDenseGranule) whose numeric pass takes at most
// `windows` windows on this device, at least kDenseGranule.
int widest_dense_span(int acc, const plan::DeviceTarget& device, int windows = kMaxDenseWindows) {
  int span = kDenseGranule;
  while (span < (1 << 22)) {
    const int next = span + kDenseGranule;
    const int window = dense_window(next, acc, device);
    if (window == 0 || dense_windows(next, window) > windows) break;
    span = next;
  }
  return span;
}

// The span for rows reaching `columns` columns: the next power of two up to
// kDenseGranule, the next multiple of kDenseGranule above it.
int64_t dense_span_for(int64_t columns) {
  const int64_t granule = std::min<int64_t>(kDenseGranule, pow2_at_least(std::max<int64_t>(columns, 32)));
  return (std::max<int64_t>(columns, 1) + granule - 1) / granule * granule;
}

// The planner's dense span for rows reaching `columns` columns: one window when it fits; else
// windows, where they make every long row dense; else the widest one window sums (the rows
// past it stay hashed, and the rows within it pay one pass, not kMaxDenseWindows).
int planned_dense_span(int64_t columns, int acc, const plan::DeviceTarget& device) {
  const int64_t needed = dense_span_for(columns);
  return needed <= widest_dense_span(acc, device) ? int(needed) : widest_dense_span(acc, device, 1);
}

jit::KernelSpec dense_spec(DType dtype, bool numeric, int span, int window) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  const std::string windows = numeric && window < span ? "_w" + std::to_string(window) : std::string();
  const std::string name = std::string("sj_spgemm_dense_") + (numeric ? "numeric_" : "symbolic_") + std::to_string(span) + windows;
  return {"spgemm_dense_rows.cu", name,
          {{"value_t", value_t}, {"acc_t", value_t}, {"symbolic", !numeric}, {"numeric", numeric}, {"warp_groups", false},
           {"block_threads", dense_block_threads(span)}, {"span_slots", span}, {"numeric_slots", numeric ? window : 0}},
          {}};
}

jit::KernelSpec rows_spec(DType dtype, bool numeric, bool shared_table, const Bin& bin) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  const std::string name = std::string("sj_spgemm_hash_") + (numeric ? "numeric_" : "symbolic_") +
                           (shared_table ? std::to_string(bin.limit) : std::string("global"));
  const int slots = shared_table ? 2 * bin.limit : 1;
  return {"spgemm_hash_rows.cu", name,
          {{"value_t", value_t}, {"acc_t", value_t}, {"symbolic", !numeric}, {"numeric", numeric},
           {"shared_table", shared_table}, {"warp_groups", bin.group_threads <= 32}, {"group_threads", bin.group_threads},
           {"block_threads", bin.block_threads}, {"table_slots", slots}, {"shared_key_slots", shared_table ? slots : 0},
           {"shared_acc_slots", numeric && shared_table ? slots : 0}, {"shared_aval_slots", numeric ? bin.group_threads : 0}},
          {}};
}

// The kernels of one pass and bin: which bins a call can use follow from its counts.
struct PassKernels {
  std::array<bool, kBinSlots> symbolic{};
  std::array<bool, kBinSlots> numeric{};
};

PassKernels kernels_needed(const BinCounts& c) {
  PassKernels k;
  for (int b = 0; b <= c.dense(); ++b) {
    k.symbolic[std::size_t(b)] = c.symbolic[std::size_t(b)] > 0;
    k.numeric[std::size_t(b)] = c.capacity[std::size_t(b)] > 0;
  }
  return k;
}

const Bin& bin_shape(const BinCounts& c, int b) { return b < c.bins ? kBins[std::size_t(b)] : kGlobalBin; }

// The kernel of one bin and pass.
jit::KernelSpec bin_kernel_spec(const BinCounts& c, int b, DType dtype, bool numeric) {
  if (b == c.dense()) return dense_spec(dtype, numeric, c.dense_span, c.dense_window);
  return rows_spec(dtype, numeric, b < c.bins, bin_shape(c, b));
}

std::vector<jit::KernelSpec> all_specs(const BinCounts& c, DType dtype) {
  std::vector<jit::KernelSpec> specs{bin_spec(true, c.bins, c.dense_span), bin_spec(false, c.bins, c.dense_span)};
  const PassKernels needed = kernels_needed(c);
  for (bool numeric : {false, true})
    for (int b = 0; b <= c.dense(); ++b)
      if ((numeric ? needed.numeric : needed.symbolic)[std::size_t(b)]) specs.push_back(bin_kernel_spec(c, b, dtype, numeric));
  return specs;
}

// Global blocks for a table of `slots` slots: two per multiprocessor, fewer when their tables
// would pass the budget, at least one.
int default_global_blocks(int64_t slots, int acc, const plan::DeviceTarget& device) {
  const double table_bytes = double(std::max<int64_t>(slots, 1)) * (4.0 + acc);
  const int64_t by_budget = int64_t(kGlobalTableBudget / table_bytes);
  return int(std::max<int64_t>(1, std::min<int64_t>(2 * int64_t(device.multiprocessors), by_budget)));
}

// Row panels: when one pass over every row does not fit the call's memory, A's rows are cut
// into panels of ceil(m / panels) rows that share one scratch block in turn. C's row counts and
// its offsets stay whole (4 bytes a row each), so C is still one allocation and every panel's
// kernels write its rows at their offsets in C directly: nothing is copied or concatenated.
// What shrinks is everything sized by rows (row products, spans, the bins' row lists) and the
// global tables when the planner also takes fewer global blocks.
int64_t panel_rows(int64_t m, int64_t panels) { return panels > 1 ? (m + panels - 1) / panels : m; }
// The panels of `rows` rows an m-row call has (at least one).
int64_t panels_in(int64_t m, int64_t rows) { return rows > 0 ? std::max<int64_t>(1, (m + rows - 1) / rows) : 1; }

// The bins of any panel of `rows` rows: the whole call's counts, each at most `rows` (a panel's
// rows are some of the call's rows). One panel of every row leaves them as they are.
BinCounts panel_counts(BinCounts c, int64_t rows) {
  for (std::size_t b = 0; b < c.symbolic.size(); ++b) {
    c.symbolic[b] = std::min(c.symbolic[b], rows);
    c.capacity[b] = std::min(c.capacity[b], rows);
  }
  return c;
}

// The planner's bound on CUB's scan storage for `count` values (it cannot ask CUB without a
// device): the decoupled look-back scan keeps a 16-byte tile state per tile of at least 64
// values, plus padding and alignment; the execution takes the larger of this and CUB's answer,
// so the planner's workspace is what runs.
std::size_t scan_bytes_bound(int64_t count) { return std::size_t(count) / 4 + (std::size_t(64) << 10); }

// Where each piece of a call's scratch lies (byte offsets into one block). counts and scan are
// the whole call's; the rest is one panel's, reused by each panel in turn.
struct ScratchLayout {
  std::size_t counts = 0, row_products = 0, row_lo = 0, fill = 0, symbolic_rows = 0, numeric_rows = 0, table_keys = 0,
              table_vals = 0, scan = 0, scan_bytes = 0, total = 0;
  std::array<int64_t, 8> symbolic_offset{};  // in rows, from symbolic_rows
  std::array<int64_t, 8> numeric_offset{};
};

// c: a panel's counts (panel_counts) of `rows` rows, of an m-row call.
ScratchLayout layout_for(const BinCounts& c, int64_t m, int64_t rows, int64_t global_blocks, int acc, std::size_t scan_bytes) {
  ScratchLayout l;
  cuda::ScratchCursor cursor(kAlign);
  const auto take = [&](std::size_t bytes) { return cursor.take(bytes); };
  l.counts = take(std::size_t(m + 1) * 4);
  l.row_products = take(std::size_t(rows) * 4);
  l.row_lo = take(c.dense_span > 0 ? std::size_t(rows) * 4 : 0);
  l.fill = take(std::size_t(2 * kBinSlots) * 4);
  int64_t symbolic_rows = 0, numeric_rows = 0;
  for (int b = 0; b <= c.dense(); ++b) {
    l.symbolic_offset[std::size_t(b)] = symbolic_rows;
    l.numeric_offset[std::size_t(b)] = numeric_rows;
    symbolic_rows += c.symbolic[std::size_t(b)];
    numeric_rows += c.capacity[std::size_t(b)];
  }
  l.symbolic_rows = take(std::size_t(symbolic_rows) * 4);
  l.numeric_rows = take(std::size_t(numeric_rows) * 4);
  const int64_t slots = c.table_slots * global_blocks;
  l.table_keys = take(std::size_t(slots) * 4);
  l.table_vals = take(std::size_t(slots) * std::size_t(acc));
  l.scan_bytes = scan_bytes;
  l.scan = take(l.scan_bytes);
  l.total = cursor.total();
  return l;
}

struct Launchable {
  cuda::Kernel kernel;
  unsigned shared_bytes = 0;
  int groups_per_block = 1;
  int block_threads = 0;
};

// The host copy of what the one synchronization reads.
struct Readback {
  int32_t numeric_fill[kBinSlots] = {};
  int32_t nnz = 0;
};

using BinKernels = std::array<std::optional<Launchable>, kBinSlots>;

// One panel: rows [first, first + rows) of A and C.
struct Panel {
  int first;
  int rows;
};

template <class T>
class RowHashExecution final : public SpgemmExecution<T> {
 public:
  // counts: a panel's (panel_counts); budget: the bytes the call may take (none: unbounded),
  // which C at its exact size must fit too.
  RowHashExecution(BinCounts counts, ScratchLayout layout, int panel_rows, std::optional<int64_t> budget, int global_blocks,
                   int dense_blocks, cuda::Kernel bin_symbolic, cuda::Kernel bin_numeric, BinKernels symbolic, BinKernels numeric)
      : counts_(counts), layout_(layout), panel_rows_(panel_rows), budget_(budget), global_blocks_(global_blocks),
        dense_blocks_(dense_blocks), bin_symbolic_(std::move(bin_symbolic)), bin_numeric_(std::move(bin_numeric)),
        symbolic_(std::move(symbolic)), numeric_(std::move(numeric)) {}

  // Symbolic pass panel by panel into the whole counts, one scan into C's offsets, then the
  // last panel's numeric bins (its scratch is still its own) and the one synchronization;
  // after C is allocated, the last panel's numeric kernels, then each earlier panel binned
  // again (its row products were overwritten by the later panels) and its numeric kernels,
  // sized by the bins' capacities since their fills are not read back. With one panel this is
  // the single pass.
  SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& o) const override {
    const Context& context = rt.context;
    context.make_current();
    const CUstream stream = o.stream;
    const int m = o.a.rows();
    const std::vector<Panel> panels = panels_of(m);
    SpgemmOutput c;
    cuda::ScratchPool& results = cuda::result_pool(context);
    c.row_ptr = new_output_array(context, &results, (std::size_t(m) + 1) * 4, stream);
    const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout_.total, stream);
    const CUdeviceptr base = scratch.ptr();
    const CUdeviceptr counts = base + layout_.counts, fill = base + layout_.fill;
    const CUdeviceptr numeric_fill = fill + 4 * kBinSlots;

    // Symbolic: per panel, bins, then each bin's distinct columns into its rows' counts.
    for (const Panel& panel : panels) {
      SPARSEJIT_CU(cuMemsetD32Async, fill, 0, std::size_t(2 * kBinSlots), stream);
      bin_rows(bin_symbolic_, o, panel, 0, base, fill, layout_.symbolic_rows, layout_.symbolic_offset, stream);
      const Pass symbolic{base, layout_.symbolic_rows, layout_.symbolic_offset, fill, counts + 4 * std::size_t(panel.first), 0, 0};
      for (int b = 0; b <= counts_.dense(); ++b)
        if (counts_.symbolic[std::size_t(b)] > 0)
          launch_bin(*symbolic_[std::size_t(b)], b, counts_.symbolic[std::size_t(b)], panel, symbolic, o, stream);
    }
    ops::exclusive_scan(reinterpret_cast<const int32_t*>(counts), c.row_ptr.template as<int32_t>(), int64_t(m) + 1,
                        reinterpret_cast<void*>(base + layout_.scan), layout_.scan_bytes, stream);

    // The last panel's numeric bins, then the one synchronization: NNZ(C) and the bins' sizes.
    const Panel& last = panels.back();
    bin_rows(bin_numeric_, o, last, c.row_ptr.ptr(), base, numeric_fill, layout_.numeric_rows, layout_.numeric_offset, stream);
    Readback back;
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, back.numeric_fill, numeric_fill, sizeof(back.numeric_fill), stream);
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back.nnz, c.row_ptr.ptr() + 4 * std::size_t(m), sizeof(back.nnz), stream);
    SPARSEJIT_CU(cuStreamSynchronize, stream);
    for (int b = 0; b <= counts_.dense(); ++b)
      if (back.numeric_fill[b] < 0 || back.numeric_fill[b] > counts_.capacity[std::size_t(b)])
        throw CudaError("row_hash: numeric bin " + std::to_string(b) + " received " + std::to_string(back.numeric_fill[b]) +
                        " rows, more than its " + std::to_string(counts_.capacity[std::size_t(b)]) + " (a kernel fault)");
    if (back.nnz < 0) throw CudaError("row_hash: NNZ(C) came back as " + std::to_string(back.nnz) + " (a kernel fault)");
    c.nnz = back.nnz;
    check_budget(m, c.nnz);
    c.col_idx = new_output_array(context, &results, std::size_t(c.nnz) * 4, stream);
    c.values = new_output_array(context, &results, std::size_t(c.nnz) * sizeof(T), stream);

    const Target target{c.row_ptr.ptr(), c.col_idx.ptr(), c.values.ptr()};
    const Pass numeric = numeric_pass(base, numeric_fill, target, last);
    for (int b = 0; b <= counts_.dense(); ++b)
      if (back.numeric_fill[b] > 0) launch_bin(*numeric_[std::size_t(b)], b, back.numeric_fill[b], last, numeric, o, stream);
    for (std::size_t p = 0; p + 1 < panels.size(); ++p) numeric_by_capacity(o, panels[p], base, target, stream);
    return c;  // the scratch block is freed on the stream after the kernels above
  }

  // The binning kernels again (the row products and spans, then the numeric bins from c's
  // offsets), then every numeric bin's kernel sized by its capacity (each reads its row count
  // on the device), panel by panel: no symbolic pass, no scan, no synchronization, no
  // allocation of C.
  void recompute(detail::RuntimeState& rt, const SpgemmOperands<T>& o, const SpgemmTarget& c) const override {
    rt.context.make_current();
    const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout_.total, o.stream);
    for (const Panel& panel : panels_of(o.a.rows())) numeric_by_capacity(o, panel, scratch.ptr(), {c.row_ptr, c.col_idx, c.values}, o.stream);
  }

 private:
  // Where one pass's bins find their rows and counts, and what they write.
  struct Pass {
    CUdeviceptr base;            // the call's scratch
    std::size_t rows;            // the pass's row lists (offset into the scratch)
    const std::array<int64_t, 8>& offsets;  // each bin's first row in them
    CUdeviceptr fill;            // each bin's row count (the bin kernel's)
    CUdeviceptr c_row_ptr;       // symbolic: the panel's counts; numeric: the panel's offsets in C
    CUdeviceptr c_col, c_val;    // numeric: C's arrays
  };

  // C's arrays.
  struct Target {
    CUdeviceptr row_ptr, col_idx, values;
  };

  std::vector<Panel> panels_of(int m) const {
    std::vector<Panel> panels;
    for (int64_t first = 0; first < m; first += panel_rows_)
      panels.push_back({int(first), int(std::min<int64_t>(panel_rows_, m - first))});
    return panels;
  }

  Pass numeric_pass(CUdeviceptr base, CUdeviceptr numeric_fill, const Target& c, const Panel& panel) const {
    return {base, layout_.numeric_rows, layout_.numeric_offset, numeric_fill, c.row_ptr + 4 * std::size_t(panel.first), c.col_idx,
            c.values};
  }

  // A panel's numeric pass without reading its bins' fills back: its row products and spans
  // binned again, its numeric bins from C's offsets, each bin's kernel over its capacity.
  void numeric_by_capacity(const SpgemmOperands<T>& o, const Panel& panel, CUdeviceptr base, const Target& c, CUstream stream) const {
    const CUdeviceptr fill = base + layout_.fill, numeric_fill = fill + 4 * kBinSlots;
    SPARSEJIT_CU(cuMemsetD32Async, fill, 0, std::size_t(2 * kBinSlots), stream);
    bin_rows(bin_symbolic_, o, panel, 0, base, fill, layout_.symbolic_rows, layout_.symbolic_offset, stream);
    bin_rows(bin_numeric_, o, panel, c.row_ptr, base, numeric_fill, layout_.numeric_rows, layout_.numeric_offset, stream);
    const Pass numeric = numeric_pass(base, numeric_fill, c, panel);
    for (int b = 0; b <= counts_.dense(); ++b)
      if (counts_.capacity[std::size_t(b)] > 0)
        launch_bin(*numeric_[std::size_t(b)], b, counts_.capacity[std::size_t(b)], panel, numeric, o, stream);
  }

  // The planner sized C at a bound of NNZ(C) (its lower one when nothing fitted at the upper):
  // the exact C must fit the call's budget beside the workspace, checked before C's columns
  // and values are allocated.
  void check_budget(int m, int64_t nnz) const {
    if (!budget_) return;
    const int64_t c_bytes = output_bytes(m, nnz, dtype_of<T>::value);
    const int64_t peak = int64_t(layout_.total) + c_bytes;
    if (peak > *budget_)
      throw UnsupportedError("row_hash: C has " + std::to_string(nnz) + " entries, " + std::to_string(c_bytes) +
                             " bytes, which with the workspace's " + std::to_string(layout_.total) + " make " +
                             std::to_string(peak) + " bytes, more than the " + std::to_string(*budget_) +
                             " this call may take; nothing of C beyond its row offsets was allocated");
  }

  // The binning kernel over a panel's rows: its rows of A (A's offsets from the panel's first
  // row, which index A's columns as they are) and its counts or offsets in C.
  void bin_rows(const cuda::Kernel& kernel, const SpgemmOperands<T>& o, const Panel& panel, CUdeviceptr c_row_ptr, CUdeviceptr base,
                CUdeviceptr fill, std::size_t rows_at, const std::array<int64_t, 8>& offsets, CUstream stream) const {
    int m = panel.rows, n = o.b.cols();
    const std::size_t first = 4 * std::size_t(panel.first);
    CUdeviceptr a_row_ptr = o.a.row_ptr().ptr() + first, a_col = o.a.col_idx().ptr();
    CUdeviceptr b_row_ptr = o.b.row_ptr().ptr(), b_col = o.b.col_idx().ptr();
    CUdeviceptr row_products = base + layout_.row_products, row_lo = base + layout_.row_lo, counts = base + layout_.counts + first;
    CUdeviceptr rows = base + rows_at;
    if (c_row_ptr != 0) c_row_ptr += first;
    struct {
      long long at[8];
    } bin_offsets;
    for (std::size_t i = 0; i < 8; ++i) bin_offsets.at[i] = offsets[i];
    void* args[] = {&m, &n, &a_row_ptr, &a_col, &b_row_ptr, &b_col, &c_row_ptr, &row_products, &row_lo, &counts, &fill, &rows,
                    &bin_offsets};
    kernel.launch({ops::blocks_for(m, kBinThreads), 1, 1}, {unsigned(kBinThreads), 1, 1}, 0, stream, args, o.early);
  }

  // Bin b's kernel over at most `most_rows` rows of a panel (it reads their count on the device).
  void launch_bin(const Launchable& l, int b, int64_t most_rows, const Panel& panel, const Pass& pass, const SpgemmOperands<T>& o,
                  CUstream stream) const {
    CUdeviceptr rows = pass.base + pass.rows + 4 * std::size_t(pass.offsets[std::size_t(b)]);
    CUdeviceptr row_count = pass.fill + 4 * std::size_t(b);
    CUdeviceptr a_row_ptr = o.a.row_ptr().ptr() + 4 * std::size_t(panel.first), a_col = o.a.col_idx().ptr(), a_val = o.a.values().ptr();
    CUdeviceptr b_row_ptr = o.b.row_ptr().ptr(), b_col = o.b.col_idx().ptr(), b_val = o.b.values().ptr();
    CUdeviceptr c_row_ptr = pass.c_row_ptr, c_col = pass.c_col, c_val = pass.c_val;
    const cuda::Dim3 block{unsigned(l.block_threads), 1, 1};
    if (b == counts_.dense()) {
      CUdeviceptr row_lo = pass.base + layout_.row_lo;
      void* args[] = {&rows, &row_count, &row_lo, &a_row_ptr, &a_col, &a_val, &b_row_ptr, &b_col, &b_val, &c_row_ptr, &c_col, &c_val};
      l.kernel.launch({unsigned(std::min<int64_t>(dense_blocks_, most_rows)), 1, 1}, block, l.shared_bytes, stream, args, o.early);
      return;
    }
    const bool global = b == counts_.bins;
    int n = o.b.cols();
    CUdeviceptr keys = global ? pass.base + layout_.table_keys : 0, vals = global ? pass.base + layout_.table_vals : 0;
    long long stride = global ? counts_.table_slots : 0;
    void* args[] = {&rows, &row_count, &n, &a_row_ptr, &a_col, &a_val, &b_row_ptr, &b_col, &b_val,
                    &c_row_ptr, &c_col, &c_val, &keys, &vals, &stride};
    const unsigned blocks = global ? unsigned(std::min<int64_t>(global_blocks_, most_rows)) : ops::blocks_for(most_rows, l.groups_per_block);
    l.kernel.launch({blocks, 1, 1}, block, l.shared_bytes, stream, args, o.early);
  }

  BinCounts counts_;
  ScratchLayout layout_;
  int64_t panel_rows_;
  std::optional<int64_t> budget_;
  int global_blocks_;
  int dense_blocks_;
  cuda::Kernel bin_symbolic_, bin_numeric_;
  BinKernels symbolic_, numeric_;
};

}  // namespace

class RowHash final : public SpgemmVariantOf<RowHash> {
 public:
  RowHash()
      : SpgemmVariantOf("row_hash", 10,
                        "Gustavson row by row: rows binned by products, a hash table per row (shared memory, global "
                        "for the longest) or a dense accumulator for long rows of a narrow span, symbolic count, scan, "
                        "numeric fill and sort") {}

  // max_shared_row: the largest shared bin whose numeric tables fit a block's shared memory on
  // this device; global_blocks: see default_global_blocks; dense_span: planned_dense_span of
  // the widest row span, 0 (off) when B's rows are not sorted (the span comes from their ends);
  // dense_window: the columns the numeric pass sums at a time (the span, or the widest that
  // fits beside its bitmap; 0 or a larger value means the span).
  nlohmann::json defaults(const SpgemmPlanInputs& in, std::vector<DecisionStep>&) const override {
    const int acc = acc_bytes(in.problem.dtype);
    int limit = kBins[0].limit;
    for (const Bin& bin : kBins)
      if (shared_bytes(bin, true, true, acc) <= in.device.shared_per_block_optin) limit = bin.limit;
    const int64_t slots = pow2_at_least(2 * std::min<int64_t>(in.features.max_row_products, in.problem.n));
    const int span = planned_dense_span(in.features.max_row_span, acc, in.device);
    return {{"max_shared_row", limit},
            {"global_blocks", default_global_blocks(slots, acc, in.device)},
            {"dense_span", in.features.b_sorted ? span : 0},
            {"dense_window", in.features.b_sorted ? dense_window(span, acc, in.device) : 0},
            {"panels", 1}};
  }

  void check(const plan::SpgemmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    const int bins = bin_count(params);
    const Bin& largest = kBins[std::size_t(bins - 1)];
    const int64_t bytes = shared_bytes(largest, true, true, acc_bytes(problem.dtype));
    if (bytes > device.shared_per_block_optin)
      throw InvalidInputError("row_hash: max_shared_row = " + std::to_string(largest.limit) + " needs " + std::to_string(bytes) +
                              " bytes of shared memory per block for " + to_string(problem.dtype) + ", more than the " +
                              std::to_string(device.shared_per_block_optin) + " of " + device.name);
    const int blocks = params.at("global_blocks").get<int>();
    if (blocks < 1 || blocks > 65535)
      throw InvalidInputError("row_hash: global_blocks = " + std::to_string(blocks) + " must be in [1, 65535]");
    const int acc = acc_bytes(problem.dtype);
    const int span = params.at("dense_span").get<int>();
    const int widest = widest_dense_span(acc, device);
    if (span != 0 && (span < 32 || span > widest || span % 32 != 0))
      throw InvalidInputError("row_hash: dense_span = " + std::to_string(span) + " must be 0 (off) or a multiple of 32 in [32, " +
                              std::to_string(widest) + "] (the widest whose " + to_string(problem.dtype) + " accumulator fits " +
                              std::to_string(kMaxDenseWindows) + " windows of a block's shared memory on " + device.name + ")");
    if (span == 0) return check_panels(problem, params);
    const int given_window = params.at("dense_window").get<int>();
    const int window = given_window > 0 ? std::min(given_window, span) : span;
    const int widest_window = dense_window(span, acc, device);
    if (window < 32 || window % 32 != 0 || window > widest_window || dense_windows(span, window) > kMaxDenseWindows)
      throw InvalidInputError("row_hash: dense_window = " + std::to_string(window) + " must be a multiple of 32 of at most " +
                              std::to_string(widest_window) + " (what fits beside dense_span = " + std::to_string(span) +
                              "'s bitmap on " + device.name + ") and at least dense_span / " + std::to_string(kMaxDenseWindows));
    check_panels(problem, params);
  }

  static void check_panels(const plan::SpgemmProblem& problem, const nlohmann::json& params) {
    const int panels = params.at("panels").get<int>();
    const int most = std::max<int>(problem.m, 1);
    if (panels < 1 || panels > most)
      throw InvalidInputError("row_hash: panels = " + std::to_string(panels) + " must be in [1, " + std::to_string(most) +
                              "] (A's rows)");
  }

  // launch: kernels and memsets (per panel the memset, the bins and each bin's two passes;
  // each panel but the last binned once more; the scan's two); sync: the one synchronization
  // and C's two allocations after it; rows: the binning passes over every row (a symbolic
  // binning is half of them; the earlier panels' rows take it twice); products: each product is
  // inserted twice (symbolic, numeric); global_products: those of rows in global-memory tables
  // (L2 atomics, one block per row, the row sorted in global memory), at most (rows that go
  // dense leave it). Panels' numeric kernels launched over their bins' capacities are not
  // priced: panels are taken only when one pass does not fit. dense_window_products: the
  // products of the rows that may go dense once per window past the first; a long row is
  // taken to span the widest row's columns, so rows of fewer than max_row_span /
  // kDenseSpanPerProduct products are priced as hashed (an estimate: the features hold no
  // row's own span).
  nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json& params) const override {
    const BinCounts c = counts_for(in.features, in.problem.n, params);
    const PassKernels k = kernels_needed(c);
    const int64_t m = in.problem.m, panels = params.at("panels").get<int>();
    const int64_t rows = panel_rows(m, panels), last_rows = m - (panels_in(m, rows) - 1) * rows;
    double per_panel = 2 + 1;
    for (int b = 0; b <= c.dense(); ++b) per_panel += k.symbolic[std::size_t(b)] + k.numeric[std::size_t(b)];
    const double launches = 2 + per_panel * double(panels_in(m, rows)) + double(panels_in(m, rows) - 1);
    // Each dense window past the first walks the long rows' products once more.
    const int windows = c.dense_span > 0 ? dense_windows(c.dense_span, c.dense_window) : 0;
    const int64_t hashed_up_to = std::max(products_limit(kDenseMinKey, in.problem.n),
                                          pow2_at_least(in.features.max_row_span / kDenseSpanPerProduct));
    const int64_t long_products = in.features.products - products_of_rows_up_to(in.features, hashed_up_to);
    return {{"launch", launches},
            {"sync", 1.0},
            {"rows", double(m) + 0.5 * double(m - last_rows)},
            {"products", double(in.features.products)},
            {"global_products", double(c.global_products)},
            {"dense_window_products", windows > 1 ? double(windows - 1) * double(long_products) : 0.0}};
  }

  // The scratch block of a run: the whole call's counts and scan, and one panel's rows, bin
  // lists and global tables (layout_for).
  int64_t workspace_bytes(const SpgemmPlanInputs& in, const nlohmann::json& params) const override {
    const int64_t m = in.problem.m, rows = panel_rows(m, params.at("panels").get<int>());
    const BinCounts c = panel_counts(counts_for(in.features, in.problem.n, params), rows);
    return int64_t(layout_for(c, m, rows, params.at("global_blocks").get<int>(), acc_bytes(in.problem.dtype), scan_bytes_bound(m + 1)).total);
  }

  // One pass when it fits; else the fewest panels (1, 2, 4, ... up to a row each) with the
  // most global blocks (from the planner's, halving) that fit: each panel adds launches and a
  // second binning of its rows, while fewer global blocks only slow the rows past the shared
  // bins. None fitting: the smallest workspace found.
  WorkspaceFit fit_workspace(const SpgemmPlanInputs& in, const nlohmann::json& params, int64_t budget) const override {
    WorkspaceFit smallest{params, workspace_bytes(in, params)};
    if (smallest.bytes <= budget) return smallest;
    const int64_t m = in.problem.m;
    const int planned_blocks = params.at("global_blocks").get<int>();
    for (int64_t panels = 1; panels <= m; panels *= 2) {
      for (int blocks = planned_blocks; blocks >= 1; blocks /= 2) {
        nlohmann::json fitted = params;
        fitted["panels"] = panels_in(m, panel_rows(m, panels));  // as many as the rows per panel make
        fitted["global_blocks"] = blocks;
        const int64_t bytes = workspace_bytes(in, fitted);
        if (bytes <= budget) return {fitted, bytes};
        if (bytes < smallest.bytes) smallest = {fitted, bytes};
      }
    }
    return smallest;
  }

  std::vector<nlohmann::json> search_space(const SpgemmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    std::vector<DecisionStep> path;
    const nlohmann::json base = defaults(in, path);
    for (int limit : {1024, 4096})
      for (int span : {0, base.at("dense_span").get<int>()}) {
        nlohmann::json params = base;
        params["max_shared_row"] = limit;
        params["dense_span"] = span;
        if (span == 0) params["dense_window"] = 0;
        if (std::find(space.begin(), space.end(), params) == space.end()) space.push_back(params);
      }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpgemmProblem& problem) const override {
    return all_specs(counts_for(bucket_features(d.features), problem.n, d.params), problem.dtype);
  }

  template <class T>
  std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>& p) const {
    Decision& d = p.decision;
    const DType dtype = p.problem.dtype;
    const int span = d.params.at("dense_span").template get<int>();
    if (span > 0 && !p.features.b_sorted)
      throw InvalidInputError("row_hash: dense_span = " + std::to_string(span) +
                              " needs B's rows sorted (a row's span comes from their first and last columns); use 0");
    const BinCounts c = counts_for(p.features, p.problem.n, d.params);
    const int global_blocks = d.params.at("global_blocks").template get<int>();
    const PassKernels needed = kernels_needed(c);
    BinKernels symbolic, numeric;
    for (bool is_numeric : {false, true})
      for (int b = 0; b <= c.dense(); ++b)
        if ((is_numeric ? needed.numeric : needed.symbolic)[std::size_t(b)])
          (is_numeric ? numeric : symbolic)[std::size_t(b)] = launchable(p.rt, d, c, b, dtype, is_numeric);
    const ops::LoadedKernel bin_symbolic = load_kernel(p.rt, d, bin_spec(true, c.bins, c.dense_span));
    const ops::LoadedKernel bin_numeric = load_kernel(p.rt, d, bin_spec(false, c.bins, c.dense_span));
    const int64_t rows = panel_rows(p.problem.m, d.params.at("panels").template get<int>());
    const BinCounts panel = panel_counts(c, rows);
    const int64_t scan_count = int64_t(p.problem.m) + 1;
    const ScratchLayout layout = layout_for(panel, p.problem.m, rows, global_blocks, acc_bytes(dtype),
                                            std::max(ops::exclusive_scan_bytes(scan_count), scan_bytes_bound(scan_count)));
    const nlohmann::json& budget = d.features.at("memory").at("budget_bytes");
    return std::make_unique<RowHashExecution<T>>(panel, layout, int(rows),
                                                  budget.is_null() ? std::nullopt : std::optional<int64_t>(budget.get<int64_t>()),
                                                  global_blocks, kDenseMaxBlocks, bin_symbolic.kernel, bin_numeric.kernel,
                                                  std::move(symbolic), std::move(numeric));
  }

 private:
  static BinCounts counts_for(const SpgemmFeatures& f, int32_t n, const nlohmann::json& params) {
    return bin_counts(f, n, bin_count(params), params.at("dense_span").get<int>(), params.at("dense_window").get<int>());
  }

  // Bin b's kernel of one pass, loaded, with its launch shape.
  static Launchable launchable(detail::RuntimeState& rt, Decision& d, const BinCounts& c, int b, DType dtype, bool numeric) {
    const ops::LoadedKernel loaded = load_kernel(rt, d, bin_kernel_spec(c, b, dtype, numeric));
    const int acc = acc_bytes(dtype);
    if (b == c.dense()) {
      const int64_t bytes = dense_shared_bytes(c.dense_span, c.dense_window, numeric, acc);
      if (bytes > 48 * 1024) loaded.kernel.set_max_dynamic_shared(int(bytes));
      return Launchable{loaded.kernel, unsigned(bytes), 1, dense_block_threads(c.dense_span)};
    }
    const Bin& shape = bin_shape(c, b);
    const int64_t bytes = shared_bytes(shape, numeric, b < c.bins, acc);
    if (bytes > 48 * 1024) loaded.kernel.set_max_dynamic_shared(int(bytes));
    return Launchable{loaded.kernel, unsigned(bytes), shape.block_threads / shape.group_threads, shape.block_threads};
  }
};

}  // namespace sparsejit::variants::spgemm

SPARSEJIT_REGISTER_VARIANT(spgemm, row_hash, sparsejit::variants::spgemm::RowHash)
