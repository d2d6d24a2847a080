#include "plan/spamm_devices.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>

#include "reference/parallel.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

std::vector<int64_t> kept_per_tile_row(const NormMap& a, const NormMap& b, double tau) {
  if (a.tile_cols != b.tile_rows)
    throw InvalidInputError("kept_per_tile_row: A's map has " + std::to_string(a.tile_cols) + " tile columns, B's " +
                            std::to_string(b.tile_rows) + " tile rows");
  // B's rows sorted descending: the j kept with ‖A_ik‖ are a prefix, found by bisection with
  // the kernels' own test (a product compared with τ, not τ divided by a norm).
  std::vector<std::vector<double>> rows(std::size_t(b.tile_rows));
  for (int32_t k = 0; k < b.tile_rows; ++k) {
    rows[std::size_t(k)].assign(b.norms.begin() + std::ptrdiff_t(k) * b.tile_cols, b.norms.begin() + std::ptrdiff_t(k + 1) * b.tile_cols);
    std::sort(rows[std::size_t(k)].begin(), rows[std::size_t(k)].end(), std::greater<>());
  }
  std::vector<int64_t> kept(std::size_t(a.tile_rows), 0);
  // Each part writes only its own rows' counts.
  detail::parallel_for(a.tile_rows, int64_t(a.tile_cols) * 16, [&](int, int64_t first, int64_t end) {
    for (int64_t i = first; i < end; ++i)
      for (int32_t k = 0; k < a.tile_cols; ++k) {
        const double norm = a.at(int32_t(i), k);
        const std::vector<double>& row = rows[std::size_t(k)];
        const auto first_dropped = std::partition_point(row.begin(), row.end(), [&](double x) { return norm * x >= tau; });
        kept[std::size_t(i)] += first_dropped - row.begin();
      }
  });
  return kept;
}

std::vector<RowBlock> split_rows(const std::vector<int64_t>& kept, int parts) {
  if (parts < 1) throw InvalidInputError("split_rows: " + std::to_string(parts) + " parts (at least 1)");
  return split_rows(kept, std::vector<double>(std::size_t(parts), 1.0 / parts));
}

std::vector<RowBlock> split_rows(const std::vector<int64_t>& kept, const std::vector<double>& shares) {
  if (shares.empty()) throw InvalidInputError("split_rows: no shares (at least 1 part)");
  double sum = 0;
  for (double s : shares) {
    if (!(s >= 0) || !std::isfinite(s)) throw InvalidInputError("split_rows: share " + std::to_string(s) + " (finite and >= 0)");
    sum += s;
  }
  if (std::abs(sum - 1) > 1e-6) throw InvalidInputError("split_rows: the shares sum to " + std::to_string(sum) + ", not 1");
  const int parts = int(shares.size());
  int64_t total = 0;
  for (int64_t x : kept) {
    if (x < 0) throw InvalidInputError("split_rows: a row keeps " + std::to_string(x) + " products");
    total += x;
  }
  const int32_t rows = int32_t(kept.size());
  std::vector<RowBlock> blocks(static_cast<std::size_t>(parts));
  int32_t row = 0;
  int64_t running = 0;
  double cumulative = 0;
  for (int p = 0; p < parts; ++p) {
    cumulative += shares[std::size_t(p)];
    RowBlock& block = blocks[std::size_t(p)];
    block.first = row;
    if (p == parts - 1) {
      row = rows;
    } else if (total == 0) {
      row = std::max(row, int32_t(std::llround(double(rows) * std::min(1.0, cumulative))));  // nothing kept: rows by share
    } else {
      const double target = double(total) * cumulative;
      // Take rows while the running sum gets nearer the target.
      while (row < rows && std::abs(double(running + kept[std::size_t(row)]) - target) <= std::abs(double(running) - target))
        running += kept[std::size_t(row++)];
    }
    block.end = row;
    block.kept = 0;
    for (int32_t r = block.first; r < block.end; ++r) block.kept += kept[std::size_t(r)];
  }
  return blocks;
}

namespace {

// The paces with each unmeasured one set to the mean of the measured; empty when none is
// measured. InvalidInputError (naming `who`) for a negative or non-finite start.
std::vector<RankPace> filled(const std::vector<RankPace>& paces, const char* who) {
  double measured_sum = 0;
  int measured = 0;
  for (const RankPace& p : paces) {
    if (!(p.start_ms >= 0) || !std::isfinite(p.start_ms))
      throw InvalidInputError(std::string(who) + ": start " + std::to_string(p.start_ms) + " ms (finite and >= 0)");
    if (p.ms_per_kept > 0 && std::isfinite(p.ms_per_kept)) {
      measured_sum += p.ms_per_kept;
      ++measured;
    }
  }
  if (measured == 0) return {};
  std::vector<RankPace> pace = paces;
  for (RankPace& p : pace)
    if (!(p.ms_per_kept > 0 && std::isfinite(p.ms_per_kept))) p.ms_per_kept = measured_sum / measured;
  return pace;
}

}  // namespace

std::vector<double> shares_to_finish_together(const std::vector<RankPace>& paces, int64_t total) {
  if (paces.empty()) throw InvalidInputError("shares_to_finish_together: no GPUs");
  const std::size_t ranks = paces.size();
  const std::vector<RankPace> pace = filled(paces, "shares_to_finish_together");
  if (pace.empty() || total <= 0) return std::vector<double>(ranks, 1.0 / double(ranks));
  // F over the GPUs by start: with the first m busy, F = (total + Σ start/μ) / Σ 1/μ, valid
  // while F reaches the m-th start and not the next one's.
  std::vector<std::size_t> order(ranks);
  for (std::size_t r = 0; r < ranks; ++r) order[r] = r;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return pace[x].start_ms < pace[y].start_ms; });
  double rate = 0, offset = 0, finish = 0;
  for (std::size_t m = 0; m < ranks; ++m) {
    const RankPace& p = pace[order[m]];
    rate += 1 / p.ms_per_kept;
    offset += p.start_ms / p.ms_per_kept;
    finish = (double(total) + offset) / rate;
    if (m + 1 == ranks || finish <= pace[order[m + 1]].start_ms) break;
  }
  std::vector<double> shares(ranks, 0.0);
  double sum = 0;
  for (std::size_t r = 0; r < ranks; ++r) sum += shares[r] = std::max(0.0, finish - pace[r].start_ms) / pace[r].ms_per_kept;
  for (double& s : shares) s /= sum;  // exactly 1 in sum, whatever the rounding
  return shares;
}

void Paces::add(const std::vector<BlockTiming>& call) {
  if (calls_ > 0 && call.size() != start_ms_.size())
    throw InvalidInputError("Paces::add: " + std::to_string(call.size()) + " GPUs' timings, the earlier calls had " +
                            std::to_string(start_ms_.size()));
  for (const BlockTiming& t : call)
    if (t.rows < 0 || t.kept < 0 || !(t.start_ms >= 0) || !(t.products_ms >= 0) || !std::isfinite(t.start_ms) || !std::isfinite(t.products_ms))
      throw InvalidInputError("Paces::add: a block of " + std::to_string(t.rows) + " rows, " + std::to_string(t.kept) +
                              " kept products, start " + std::to_string(t.start_ms) + " ms, products " + std::to_string(t.products_ms) +
                              " ms (each finite and >= 0)");
  ++calls_;
  const double weight = 1.0 / double(std::min(calls_, kPaceMemory));
  const auto blend = [&](double& sum, double now) { sum += weight * (now - sum); };
  start_ms_.resize(call.size(), 0.0);
  double rr = 0, rk = 0, kk = 0, rt = 0, kt = 0;
  for (std::size_t r = 0; r < call.size(); ++r) {
    const BlockTiming& t = call[r];
    blend(start_ms_[r], t.start_ms);
    const double rows = t.rows, kept = double(t.kept);
    rr += rows * rows;
    rk += rows * kept;
    kk += kept * kept;
    rt += rows * t.products_ms;
    kt += kept * t.products_ms;
  }
  blend(rr_, rr);
  blend(rk_, rk);
  blend(kk_, kk);
  blend(rt_, rt);
  blend(kt_, kt);
  fit();
}

// The least-squares cost, both terms ≥ 0: a term the fit makes negative is dropped and the other
// fitted alone; blocks whose rows and kept products are in one proportion (even rows of even
// work) tell the terms apart no more, and the cost is then the kept products' alone.
void Paces::fit() {
  const double det = rr_ * kk_ - rk_ * rk_;
  double row = 0, kept = 0;
  if (det > 1e-6 * rr_ * kk_) {
    row = (rt_ * kk_ - kt_ * rk_) / det;
    kept = (kt_ * rr_ - rt_ * rk_) / det;
  }
  if (!(det > 1e-6 * rr_ * kk_) || row < 0 || kept < 0) {
    const bool by_kept = kk_ > 0 && (row < 0 || !(kept < 0));
    row = by_kept || rr_ <= 0 ? 0.0 : rt_ / rr_;
    kept = by_kept ? kt_ / kk_ : 0.0;
  }
  ms_per_row_ = std::max(0.0, row);
  ms_per_kept_ = std::max(0.0, kept);
}

double finish_ms(const Paces& paces, const std::vector<RowBlock>& blocks) {
  if (std::size_t(paces.ranks()) != blocks.size())
    throw InvalidInputError("finish_ms: paces of " + std::to_string(paces.ranks()) + " GPUs for " + std::to_string(blocks.size()) + " blocks");
  double finish = 0;
  for (std::size_t r = 0; r < blocks.size(); ++r)
    finish = std::max(finish, paces.finish_ms(int(r), blocks[r].end - blocks[r].first, blocks[r].kept));
  return finish;
}

const char* to_string(CutSource source) {
  switch (source) {
    case CutSource::Even: return "even kept products (no earlier call of this problem on these GPUs)";
    case CutSource::FinishTogether: return "finish together at the paces of the earlier calls";
    case CutSource::Previous: return "the previous call's blocks (a new cut at the paces was not 2% faster)";
  }
  return "?";
}

namespace {

// Each block's kept products counted again over `kept`, and its share of their total.
void recount(const std::vector<int64_t>& kept, BlockCut& cut) {
  int64_t total = 0;
  for (int64_t x : kept) total += std::max<int64_t>(x, 0);
  cut.shares.clear();
  for (RowBlock& block : cut.blocks) {
    block.kept = std::accumulate(kept.begin() + block.first, kept.begin() + block.end, int64_t(0));
    cut.shares.push_back(total == 0 ? 0.0 : double(block.kept) / double(total));
  }
}

}  // namespace

BlockCut cut_blocks(const std::vector<int64_t>& kept, int parts, const Paces* paces, const std::vector<RowBlock>& previous) {
  BlockCut cut;
  if (paces == nullptr || !paces->measured()) {
    cut.blocks = split_rows(kept, parts);
    cut.shares.assign(std::size_t(std::max(parts, 0)), parts > 0 ? 1.0 / parts : 0.0);
    return cut;
  }
  if (paces->ranks() != parts)
    throw InvalidInputError("cut_blocks: paces of " + std::to_string(paces->ranks()) + " GPUs for " + std::to_string(parts) + " parts");
  // Each tile row's cost in whole picoseconds (split_rows cuts integer work), and the GPUs'
  // starts at a picosecond per unit.
  constexpr double kUnitsPerMs = 1e9;
  std::vector<int64_t> cost(kept.size());
  int64_t total = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i] < 0) throw InvalidInputError("cut_blocks: a row keeps " + std::to_string(kept[i]) + " products");
    total += cost[i] = std::llround((paces->ms_per_row() + paces->ms_per_kept() * double(kept[i])) * kUnitsPerMs);
  }
  std::vector<RankPace> starts;
  for (int r = 0; r < parts; ++r) starts.push_back({paces->start_ms(r), 1.0 / kUnitsPerMs});
  cut.blocks = split_rows(cost, shares_to_finish_together(starts, total));
  cut.source = CutSource::FinishTogether;
  recount(kept, cut);
  cut.predicted_ms = finish_ms(*paces, cut.blocks);
  const bool comparable = previous.size() == cut.blocks.size() && !previous.empty() && previous.front().first == 0 &&
                          previous.back().end == int32_t(kept.size());
  if (!comparable) return cut;
  BlockCut again;
  again.blocks = previous;
  again.source = CutSource::Previous;
  recount(kept, again);
  again.predicted_ms = finish_ms(*paces, again.blocks);
  return cut.predicted_ms <= 0.98 * again.predicted_ms ? cut : again;
}

double imbalance(const std::vector<RowBlock>& blocks) {
  int64_t total = 0, most = 0;
  for (const RowBlock& b : blocks) {
    total += b.kept;
    most = std::max(most, b.kept);
  }
  return total == 0 ? 1.0 : double(most) * double(blocks.size()) / double(total);
}

}  // namespace sparsejit::plan
