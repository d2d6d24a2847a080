// SpAMM spread over GPUs (SpammOptions::devices, ops/spamm_devices.hpp): with this runtime's
// GPU alone (the same steps with one rank) and with every GPU of the machine, against
// reference::spamm at the reported τ on fresh random decay inputs, C poisoned first:
// non-square shapes, sizes not a multiple of the tile, a padded leading dimension, B = A;
// the blocks cover C's tile rows and their kept products add up to the call's; bad device
// lists fail before C is written; a second call of the same problem cuts the blocks by the
// cost the first call measured and is right too; operands replicated beforehand (Runtime::replicate)
// leave C distributed, each block on its GPU, and gathered into a padded, poisoned C it is the
// reference's; spread operands that do not fit are refused by name. Skipped without NCCL
// (SPARSEJIT_NCCL_LIBRARY).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/spamm_devices.hpp"
#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class SpammMultiGpu : public test::GpuSuite {};

// Algebraic decay with random signs, magnitudes perturbed by [0.5, 1.5): new values each seed.
Dense<float> decay(int32_t rows, int32_t cols, uint64_t seed) {
  Dense<double> d = generate::algebraic_decay(rows, cols, 0.1, 0.1, generate::DecaySigns::Random, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> scale(0.5, 1.5);
  for (double& v : d.data) v *= scale(rng);
  return cast<float>(d);
}

struct Case {
  int32_t m, k, n;
  int64_t pad;
  bool b_is_a;
};

bool vendor(const Decision& d) { return variants::SpammRegistry::find(d.variant)->traits.vendor; }

// Each block's kept products, counted on the device (templates/spamm_row_counts.cu), are the
// CPU specification's count over its tile rows (plan::kept_per_tile_row on the host's norms,
// which equal the device's).
void expect_blocks_keep_the_host_count(const nlohmann::json& blocks, const Dense<float>& a, const Dense<float>& b, const SpammInfo& info,
                                       const std::string& what) {
  const std::vector<int64_t> rows = plan::kept_per_tile_row(tile_norms(a, info.tile), tile_norms(b, info.tile), info.tau);
  for (const nlohmann::json& block : blocks) {
    int64_t want = 0;
    for (int32_t r = block.at("tile_rows")[0].get<int32_t>(); r < block.at("tile_rows")[1].get<int32_t>(); ++r) want += rows[std::size_t(r)];
    EXPECT_EQ(block.at("kept_products").get<int64_t>(), want) << what << ", device " << block.at("device");
  }
}

// One call on `devices`, checked; returns its decision.
Decision check(Runtime& rt, const Case& s, const std::vector<int>& devices, SpammPrecision precision, uint64_t seed) {
  const std::string what = std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + " pad " +
                           std::to_string(s.pad) + (s.b_is_a ? " B = A" : "") + " " + to_string(precision) + " on " +
                           std::to_string(devices.size()) + " device(s), seed " + std::to_string(seed);
  const Dense<float> a = decay(s.m, s.k, seed), b = s.b_is_a ? a : decay(s.k, s.n, seed + 1);
  DeviceDense<float> da(rt.context(), s.m, s.k, s.k + s.pad), dc(rt.context(), s.m, s.n, s.n + s.pad);
  DeviceDense<float> db_own(rt.context(), s.k, s.n, s.n + s.pad);
  da.upload(a);
  db_own.upload(b);
  const DeviceDense<float>& db = s.b_is_a ? da : db_own;
  dc.buffer().fill_bytes(0xFF);
  SpammOptions o;
  o.valid_ratio = 0.1;
  o.precision = precision;
  o.devices = devices;
  const SpammInfo info = rt.spamm(da, db, dc, o);
  const Dense<float> got = dc.download();
  test::expect_all_written(got.data, what);
  Dense<float> want;
  reference::spamm(a, b, want, info.tile, info.tau);
  const double tolerance = precision == SpammPrecision::Full ? 1e-4 : 2e-3;
  EXPECT_LE(test::relative_error(test::as_double(got.data), test::as_double(want.data)), tolerance) << what << "\n"
                                                                                                    << describe(*info.decision);
  const Decision& d = *info.decision;
  const nlohmann::json& blocks = d.features.at("devices");
  EXPECT_EQ(blocks.size(), devices.size() == 1 && devices[0] == -1 ? std::size_t(device_count()) : devices.size()) << what;
  int64_t kept = 0;
  int32_t next_row = 0;
  for (const nlohmann::json& block : blocks) {
    EXPECT_EQ(block.at("tile_rows")[0].get<int32_t>(), next_row) << what;
    next_row = block.at("tile_rows")[1].get<int32_t>();
    kept += block.at("kept_products").get<int64_t>();
  }
  EXPECT_EQ(next_row, (s.m + info.tile - 1) / info.tile) << what;
  if (!vendor(d)) {
    EXPECT_EQ(kept, info.valid_products) << what;
    expect_blocks_keep_the_host_count(blocks, a, b, info, what);
  }
  EXPECT_EQ(blocks.at(0).at("device").get<int>(), rt.device().ordinal) << what;
  return d;
}

// Every GPU of the host (the runtime's alone where it has one).
std::vector<int> all_gpus() { return {-1}; }

// A·B with A and B replicated on every GPU and C distributed, gathered into a padded C
// poisoned first, against the reference; the blocks lie on the GPUs the Decision names.
Decision check_resident(Runtime& rt, const Case& s, SpreadDense<float>& c, uint64_t seed) {
  const std::string what = std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + (s.b_is_a ? " B = A" : "") +
                           " resident, seed " + std::to_string(seed);
  const Dense<float> a = decay(s.m, s.k, seed), b = s.b_is_a ? a : decay(s.k, s.n, seed + 1);
  DeviceDense<float> da(rt.context(), s.m, s.k, s.k + s.pad), db(rt.context(), s.k, s.n, s.n + s.pad);
  da.upload(a);
  db.upload(b);
  const SpreadDense<float> spread_a = rt.replicate(da, all_gpus());
  std::optional<SpreadDense<float>> own_b;
  if (!s.b_is_a) own_b.emplace(rt.replicate(db, all_gpus()));
  const SpreadDense<float>& spread_b = s.b_is_a ? spread_a : *own_b;
  EXPECT_TRUE(spread_a.replicated()) << what;
  SpammOptions o;
  o.valid_ratio = 0.1;
  const SpammInfo info = rt.spamm(spread_a, spread_b, c, o);
  const Decision& d = *info.decision;
  const nlohmann::json& blocks = d.features.at("devices");
  EXPECT_EQ(c.parts.size(), blocks.size()) << what;
  EXPECT_EQ(c.devices.size(), std::size_t(device_count())) << what;
  for (std::size_t r = 0; r < c.parts.size(); ++r) {
    EXPECT_EQ(blocks[r].at("device").get<int>(), c.devices[r]) << what;
    const int32_t first = std::min(blocks[r].at("tile_rows")[0].get<int32_t>() * info.tile, s.m);
    const int32_t end = std::min(blocks[r].at("tile_rows")[1].get<int32_t>() * info.tile, s.m);
    EXPECT_EQ(c.first_rows[r], first) << what;
    EXPECT_EQ(c.parts[r].rows(), end - first) << what;
    EXPECT_EQ(c.parts[r].cols(), s.n) << what;
  }
  EXPECT_FALSE(c.replicated() && c.parts.size() > 1) << what;
  if (!vendor(d)) expect_blocks_keep_the_host_count(blocks, a, b, info, what);
  DeviceDense<float> dc(rt.context(), s.m, s.n, s.n + s.pad);
  dc.buffer().fill_bytes(0xFF);
  rt.gather(c, dc);
  const Dense<float> got = dc.download();
  test::expect_all_written(got.data, what);
  Dense<float> want;
  reference::spamm(a, b, want, info.tile, info.tau);
  EXPECT_LE(test::relative_error(test::as_double(got.data), test::as_double(want.data)), 1e-4) << what << "\n" << describe(d);
  return d;
}

bool nccl_missing(const std::exception& e) { return std::string(e.what()).find("NCCL could not be loaded") != std::string::npos; }

TEST_F(SpammMultiGpu, OneRankIsTheSameSteps) {
  try {
    for (SpammPrecision precision : {SpammPrecision::Full, SpammPrecision::FP16})
      check(rt(), {700, 450, 520, 3, false}, {rt().device().ordinal}, precision, next_seed());
  } catch (const UnsupportedError& e) {
    if (nccl_missing(e)) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST_F(SpammMultiGpu, EveryGpuAgainstTheReference) {
  if (device_count() < 2) GTEST_SKIP() << "one GPU here: the one-rank test covers these steps";
  try {
    check(rt(), {1100, 700, 900, 5, false}, {-1}, SpammPrecision::Full, next_seed());
    check(rt(), {2048, 2048, 2048, 0, true}, {-1}, SpammPrecision::FP16, next_seed());
    const Decision d = check(rt(), {1500, 1500, 1500, 0, true}, {-1}, SpammPrecision::TF32, next_seed());
    EXPECT_LE(d.features.at("imbalance").get<double>(), 1.25) << describe(d);
  } catch (const UnsupportedError& e) {
    if (nccl_missing(e)) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST_F(SpammMultiGpu, ASecondCallCutsTheBlocksByTheFirstCallsPaces) {
  try {
    const uint64_t seed = next_seed();
    const Case s{1300, 1300, 1300, 0, false};
    check(rt(), s, {-1}, SpammPrecision::Full, seed);  // the same problem, new values below
    const Decision d = check(rt(), s, {-1}, SpammPrecision::Full, seed + 7);
    const nlohmann::json& balance = d.features.at("balance");
    EXPECT_EQ(balance.at("source").get<std::string>().find("even"), std::string::npos) << describe(d);  // cut by the paces
    const nlohmann::json& paces = balance.at("paces");
    EXPECT_EQ(paces.at("calls").get<int>(), 1) << describe(d);
    EXPECT_EQ(paces.at("start_ms").size(), d.features.at("devices").size()) << describe(d);
    EXPECT_GT(paces.at("ms_per_tile_row").get<double>() + paces.at("ms_per_kept").get<double>(), 0.0) << describe(d);
  } catch (const UnsupportedError& e) {
    if (nccl_missing(e)) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST_F(SpammMultiGpu, ResidentOperandsLeaveCDistributed) {
  try {
    SpreadDense<float> c;
    check_resident(rt(), {1100, 700, 900, 5, false}, c, next_seed());
    // The same problem again: C's parts are reused where the blocks keep their rows.
    const Decision again = check_resident(rt(), {1100, 700, 900, 5, false}, c, next_seed());
    EXPECT_NE(again.features.at("balance").at("source").get<std::string>().find("previous call"), std::string::npos) << describe(again);
    SpreadDense<float> square;
    check_resident(rt(), {1500, 1500, 1500, 0, true}, square, next_seed());
  } catch (const UnsupportedError& e) {
    if (nccl_missing(e)) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST_F(SpammMultiGpu, SpreadOperandsThatDoNotFitAreRefused) {
  try {
    DeviceDense<float> a(rt().context(), 64, 64);
    a.upload(decay(64, 64, next_seed()));
    const SpreadDense<float> spread = rt().replicate(a, all_gpus());
    SpreadDense<float> c;
    SpammOptions o;
    o.tau = 1.0;
    rt().spamm(spread, spread, c, o);
    const auto refused = [&](const std::function<void()>& call, const std::string& words) {
      try {
        call();
        ADD_FAILURE() << "no error for " << words;
      } catch (const InvalidInputError& e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      }
    };
    SpreadDense<float> out;
    if (c.parts.size() > 1) refused([&] { rt().spamm(c, spread, out, o); }, "A must be replicated");
    SpammOptions other = o;
    other.devices = {rt().device().ordinal, rt().device().ordinal};
    refused([&] { rt().spamm(spread, spread, out, other); }, "listed twice");
    DeviceDense<float> wrong(rt().context(), 64, 65);
    refused([&] { rt().gather(c, wrong); }, "the target 64x65");
    SpreadDense<float> broken = std::move(c);
    broken.first_rows.back() += 1;
    if (broken.parts.size() > 1) {
      DeviceDense<float> into(rt().context(), 64, 64);
      refused([&] { rt().gather(broken, into); }, "blocks must follow each other");
    }
  } catch (const UnsupportedError& e) {
    if (nccl_missing(e)) GTEST_SKIP() << e.what();
    throw;
  }
}

TEST_F(SpammMultiGpu, BadDeviceListsFailBeforeCIsWritten) {
  DeviceDense<float> a(rt().context(), 64, 64), c(rt().context(), 64, 64);
  a.upload(decay(64, 64, next_seed()));
  c.buffer().fill_bytes(0xFF);
  SpammOptions o;
  o.tau = 1.0;
  const int own = rt().device().ordinal;
  const auto refused = [&](std::vector<int> devices, const std::string& words) {
    o.devices = devices;
    try {
      rt().spamm(a, a, c, o);
      ADD_FAILURE() << "no error for " << words;
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({own, own}, "listed twice");
  refused({device_count()}, "device " + std::to_string(device_count()) + " is not a GPU of this host");
  refused({-2}, "device -2 is not a GPU");
  if (device_count() >= 2) refused({own == 0 ? 1 : 0}, "lack this runtime's GPU");
  for (float v : c.download().data) ASSERT_TRUE(test::is_poison(v));
}

}  // namespace
}  // namespace sparsejit
