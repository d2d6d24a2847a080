// Matrix features: the measurements the planners and models decide on. Each one is defined
// exactly below; the definitions follow the papers in DESIGN.md where they name a feature
// (RS-SpMM 4.2/4.3: clustering bins, accumulations, row-segment split; tSparse: 8x8 bitmap
// tiles, NNZ(Ĉ) and NNZ(Ĉ_tiles), RowA; cuSpAMM: tile norm maps and the valid ratio).
//
// Every function that takes a PatternView checks it first with validate() (matrix.hpp) and
// throws InvalidInputError naming the first bad offset or index. Functions that look at the
// distance between neighbouring nonzeros of a row (clustering_bins, row_segment_split,
// inspect) need sorted rows without duplicates; the others accept any column order.
//
// Configuration defaults:
//   kDefaultPanelWidth = 256  column-panel width for accumulations in inspect() (RS-SpMM's
//                             calibration matrices use 256-column panels, section 4.3)
//   kDefaultTile       = 8    bitmap tile edge (tSparse tiles are 8x8, one 64-bit bitmap)
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/matrix.hpp"

namespace sparsejit {

inline constexpr int32_t kDefaultPanelWidth = 256;
inline constexpr int32_t kDefaultTile = 8;

// ---------------------------------------------------------------------------------------
// Basic statistics. A row's length is its number of stored entries. With rows == 0 or
// cols == 0 every ratio below is 0.
struct BasicStats {
  int32_t rows = 0;
  int32_t cols = 0;
  int64_t nnz = 0;
  double density = 0;      // nnz / (rows * cols)
  int64_t row_min = 0;     // shortest row
  int64_t row_max = 0;     // longest row
  double row_mean = 0;     // nnz / rows: tSparse's RowA, the average row length
  double row_std = 0;      // population standard deviation of the row lengths (divides by rows)
  double row_cv = 0;       // row_std / row_mean, 0 when row_mean is 0
  int64_t empty_rows = 0;  // rows with no entry
};
BasicStats basic_stats(PatternView pattern);

// ---------------------------------------------------------------------------------------
// Row-segment clustering (RS-SpMM 4.2). For every pair of neighbouring nonzeros in a row,
// at columns c < c', the distance is c' - c (>= 1). A row of n nonzeros gives n - 1
// distances; rows are not joined. Distances go to bins by powers of 4:
//   bin 0: [1, 1]     bin 1: [2, 3]     bin b for 2 <= b <= 10: [4^(b-1), 4^b - 1]
//   (bin 2: [4, 15], bin 3: [16, 63], ..., bin 10: [262144, 1048575]);
//   bin 11: every distance >= 1048576.
// That is: bin 0 for distance 1, else 1 + floor(log4(distance)), at most 11.
//
// Number of accumulations (RS-SpMM 4.3): the cost formula charges C1 per accumulation and
// C2 per nonzero separately, and for a dense 4K x 4K matrix with 256-column panels counts
// 4K * (4K / 256) accumulations, one per row per panel. So an accumulation is the flush of
// one row segment's partial sums to the output: the number of accumulations is the number of
// non-empty row segments, where a row segment is the part of a row inside one column panel
// of panel_width columns (panel p covers columns [p * W, (p + 1) * W)). It is not nnz: the
// multiply-adds per output column are simply nnz (BasicStats::nnz).
inline constexpr int kClusterBins = 12;
struct ClusterBins {
  std::array<int64_t, kClusterBins> counts{};  // distances per bin
  std::array<double, kClusterBins> fractions{};  // counts / distances (0 when distances is 0),
                                                 // comparable across matrix sizes
  int64_t distances = 0;        // sum of counts = nnz - (rows with at least one entry)
  int32_t panel_width = 0;      // W used for accumulations
  int64_t accumulations = 0;    // non-empty (row, column panel) segments
};
// Bin of one distance (>= 1) as defined above.
int cluster_bin(int64_t distance);
// The smallest distance in bin b (1, 2, 4, 16, ..., 4^(b-1)).
int64_t cluster_bin_lower(int bin);
// Throws InvalidInputError naming panel_width when it is < 1.
ClusterBins clustering_bins(PatternView pattern, int32_t panel_width = kDefaultPanelWidth);

// ---------------------------------------------------------------------------------------
// Heavy/light row-segment split (RS-SpMM section 3). Columns are cut into ceil(cols / W)
// panels of W columns (the last one may be narrower). A row segment (one row inside one
// panel) is heavy when it holds >= T nonzeros; its nonzeros go to the heavy (vertically
// streamed) part. Every other nonzero is light and goes to the light (horizontal) part.
struct SplitStats {
  int32_t panel_width = 0;     // W
  int32_t threshold = 0;       // T
  int32_t panels = 0;          // ceil(cols / W)
  int64_t segments = 0;        // non-empty row segments (the accumulations at width W)
  int64_t heavy_segments = 0;  // segments with >= T nonzeros (acc_dense of RS-SpMM 4.3)
  int64_t heavy_nnz = 0;       // nonzeros in heavy segments (nnz_d of RS-SpMM 4.3)
  double heavy_fraction = 0;   // heavy_nnz / nnz, 0 when nnz is 0
  int64_t light_rows = 0;      // rows that keep at least one light nonzero
  int64_t light_nnz = 0;       // nnz - heavy_nnz
};
// Throws InvalidInputError naming panel_width or threshold when it is < 1.
SplitStats row_segment_split(PatternView pattern, int32_t panel_width, int32_t threshold);

// ---------------------------------------------------------------------------------------
// Bitmap tiles (tSparse). The matrix is cut into tile x tile blocks from (0, 0); edge tiles
// are partial. A tile is non-empty when it holds at least one entry.
struct TileStats {
  int32_t tile = 0;
  int64_t tiles = 0;          // non-empty tiles: NNZ(A_tiles) in tSparse
  double nnz_median = 0;      // of the entries per non-empty tile; the mean of the two middle
                              // values when the count of tiles is even
  double nnz_mean = 0;        // nnz / tiles
  double nnz_std = 0;         // population standard deviation of entries per non-empty tile
  double bitmap_density = 0;  // nnz_mean / (tile * tile): the fraction of bitmap bits set
};
// Throws InvalidInputError naming tile when it is < 1. All stats are 0 when nnz is 0.
TileStats bitmap_tiles(PatternView pattern, int32_t tile = kDefaultTile);

// Intermediate products of C = A·B (tSparse's Ĉ). Both throw InvalidInputError naming both
// shapes when a.cols != b.rows.
// NNZ(Ĉ): sum over the entries a_ik of A of the length of row k of B.
int64_t element_products(PatternView a, PatternView b);
// NNZ(Ĉ_tiles): sum over the non-empty tiles A_IK of the number of non-empty tiles in tile
// row K of B (one tile-by-tile product each).
int64_t tile_products(PatternView a, PatternView b, int32_t tile = kDefaultTile);

// ---------------------------------------------------------------------------------------
// SpGEMM C = A·B: tSparse's NNZ(A), RowA and NNZ(Ĉ), and what the row-wise kernels bin rows
// by. A row's products are the scalar products its row of C accumulates: the sum, over its
// entries a_ik, of the length of row k of B; NNZ(Ĉ) is their sum over the rows, and a row of C
// holds at most min(products, B's columns) entries. Rows need not be sorted; duplicate
// entries count as often as they are stored.
inline constexpr int kProductBuckets = 65;
struct SpgemmFeatures {
  BasicStats a;                  // of A: a.nnz is NNZ(A), a.row_mean tSparse's RowA
  BasicStats b;                  // of B
  int64_t products = 0;          // NNZ(Ĉ)
  int64_t max_row_products = 0;  // the most products of one row
  int64_t product_rows = 0;      // rows with at least one product (the rows of C that can be non-empty)
  // The widest column span of a row of C's pattern: max over rows with products of
  // (largest column - smallest column + 1) of the B rows the row reaches (0 without products).
  // A row of C fits a dense accumulator of its span.
  int64_t max_row_span = 0;
  // Rows by their products p: [0] counts the rows with p = 0, [1 + ceil(log2(p))] the others
  // (p = 1 in [1], 2 in [2], 3..4 in [3], 5..8 in [4], ...), so the rows with 1 <= p <= 2^j
  // are buckets 1 to 1 + j: the power-of-two row bins of the row-wise kernels count exactly.
  std::array<int64_t, kProductBuckets> rows_by_products{};
  std::array<int64_t, kProductBuckets> products_by_bucket{};  // the products of those rows
  bool a_sorted = false;         // every row of A has strictly increasing columns
  bool b_sorted = false;         // the same for B
  // tSparse's 8 x 8 bitmap tiles: the non-empty tiles of A and of B, the tile products (each
  // tile (I, K) of A times each tile of B's tile row K: NNZ(Ĉ) over tiles) and the mean share
  // of a tile's 64 slots A's and B's tiles fill.
  int64_t a_tiles = 0;
  int64_t b_tiles = 0;
  int64_t tile_products = 0;
  double a_tile_density = 0;
  double b_tile_density = 0;
};
// One pass over each pattern. Throws InvalidInputError naming both shapes when a.cols !=
// b.rows, and naming the first violation of a malformed pattern.
SpgemmFeatures spgemm_features(PatternView a, PatternView b);
// The rows with 1 <= products <= limit (limit a power of two), and their products, from the buckets.
int64_t rows_with_products_up_to(const SpgemmFeatures& features, int64_t limit);
int64_t products_of_rows_up_to(const SpgemmFeatures& features, int64_t limit);
// Flat keys: rows_a cols_a nnz_a row_a (RowA) row_a_max rows_b cols_b nnz_b row_b row_b_max
// products max_row_products product_rows max_row_span products_per_row a_sorted b_sorted a_tiles b_tiles
// tile_products products_per_tile_product a_tile_density b_tile_density, and the arrays
// rows_by_products and products_by_bucket (up to the last non-empty bucket).
nlohmann::json to_json(const SpgemmFeatures& features);

// ---------------------------------------------------------------------------------------
// SpAMM tile norms (cuSpAMM 3.1/3.2). A dense matrix is cut into tile x tile blocks from
// (0, 0), edge tiles partial (no padding is counted). norms[i * tile_cols + j] is the
// Frobenius norm sqrt(sum of squares) of block (i, j), accumulated in double.
struct NormMap {
  int32_t tile = 0;
  int32_t tile_rows = 0;  // ceil(rows / tile)
  int32_t tile_cols = 0;  // ceil(cols / tile)
  std::vector<double> norms;
  double at(int32_t i, int32_t j) const { return norms[std::size_t(i) * std::size_t(tile_cols) + std::size_t(j)]; }
};
// Throws InvalidInputError naming tile when it is < 1. Instantiated for float, double, half
// and bfloat16.
template <class T>
NormMap tile_norms(const Dense<T>& matrix, int32_t tile);

// The fraction of the tile_rows(a) * tile_cols(a) * tile_cols(b) triples (i, k, j) with
// ||A_ik|| * ||B_kj|| >= tau: the tile products SpAMM performs, cuSpAMM's valid ratio. 0
// when there are no triples. Throws InvalidInputError naming the values when the tiles
// differ, a.tile_cols != b.tile_rows, tau is NaN or a norm is NaN.
double valid_ratio(const NormMap& a, const NormMap& b, double tau);

// What a threshold tau selects from a pair of norm maps (SpAMM's feature and its a-priori
// error bound), computed as the device computes it: a product is kept iff
// ||A_ik|| * ||B_kj|| >= tau (the double product; a NaN product is skipped).
struct SpammSelection {
  int64_t valid = 0;    // kept triples (i, k, j)
  int64_t triples = 0;  // tile_rows(a) * tile_cols(a) * tile_cols(b)
  double ratio = 0;     // valid / triples (0 without triples)
  // sqrt(sum over (i, j) of (sum over skipped k of ||A_ik|| * ||B_kj||)^2): by the triangle
  // inequality and ||XY||F <= ||X||F ||Y||F, ||C - A·B||F is at most this in exact arithmetic.
  double error_bound = 0;
  double max_product = 0;          // the largest ||A_ik|| * ||B_kj||
  double min_positive_product = 0; // the smallest positive one (0 when none is positive)
};
// Throws as valid_ratio does.
SpammSelection spamm_selection(const NormMap& a, const NormMap& b, double tau);

// ---------------------------------------------------------------------------------------
// A 64-bit fingerprint of the shape and structure: a word-by-word hash of rows, cols, nnz,
// row_ptr[0..rows] and col_idx[0..nnz). Equal patterns give equal fingerprints. Each step
// is a bijection of the running state, so changing any single size or index always changes
// the fingerprint. It is not a cryptographic hash; values are not read.
uint64_t fingerprint(PatternView pattern);
// "0x" and 16 lowercase hex digits.
std::string fingerprint_hex(uint64_t fingerprint);

// ---------------------------------------------------------------------------------------
// Everything the planners read, measured in a few linear passes (rows must be sorted).
struct Features {
  BasicStats basic;
  ClusterBins clustering;  // with panel_width = kDefaultPanelWidth
  TileStats tiles;         // with tile = kDefaultTile
  uint64_t fingerprint = 0;
};
Features inspect(PatternView pattern);

// JSON with flat, stable keys (the decision trees refer to features by these names):
//   rows cols nnz density row_min row_max row_mean row_std row_cv empty_rows
//   cluster_distances cluster_count_0 .. cluster_count_11 cluster_frac_0 .. cluster_frac_11
//   accumulations accumulation_panel_width
//   tile_size tiles tile_nnz_median tile_nnz_mean tile_nnz_std bitmap_density
//   fingerprint (a string, fingerprint_hex: JSON numbers cannot hold 64 bits everywhere)
nlohmann::json to_json(const Features& features);
// Keys: panel_width threshold panels segments heavy_segments heavy_nnz heavy_fraction
//       light_rows light_nnz
nlohmann::json to_json(const SplitStats& split);
// A summary, not the norms: tile tile_rows tile_cols norm_min norm_max norm_mean
// norm_total (sqrt of the sum of squared tile norms, the whole matrix's Frobenius norm).
// The norm statistics are 0 for an empty map.
nlohmann::json to_json(const NormMap& norms);

// A human-readable multi-line summary for the CLI (sizes, row lengths, clustering bins,
// tiles, fingerprint), each line ending in '\n'.
std::string describe(const Features& features);

}  // namespace sparsejit
