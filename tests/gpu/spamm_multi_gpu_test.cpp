// SpAMM spread over GPUs (SpammOptions::devices, ops/spamm_devices.hpp): with this runtime's
// GPU alone (the same steps with one rank) and with every GPU of the machine, against
// reference::spamm at the reported τ on fresh random decay inputs, C poisoned first:
// non-square shapes, sizes not a multiple of the tile, a padded leading dimension, B = A;
// the blocks cover C's tile rows and their kept products add up to the call's; bad device
// lists fail before C is written. Skipped without NCCL (SPARSEJIT_NCCL_LIBRARY).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  if (!vendor(d)) EXPECT_EQ(kept, info.valid_products) << what;
  EXPECT_EQ(blocks.at(0).at("device").get<int>(), rt.device().ordinal) << what;
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
