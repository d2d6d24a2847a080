// One of several processes sharing a cache directory (spawned by cache_test):
//   cache_worker DIR WORKER_ID KEYS RECORDS
// asks for KEYS kernels (fake compile, distinct bytes per key) in an order that differs per
// worker, checks every binary it gets, inserts RECORDS tuning records and RECORDS measured
// selections (measured_record(WORKER_ID, r)) and finds each of its measured selections again.
//   cache_worker DIR WORKER_ID 0 RECORDS --lookup-only
// only finds measured_record(WORKER_ID, r) for every r, and stores one more (which a
// read-only cache skips). Exit status 0 when everything matched, 2 on a wrong binary, 3 on
// bad arguments, 4 on a measured selection not found or not as stored.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "base/sha256.hpp"
#include "tests/support/fake_cubin.hpp"

namespace {

using namespace sparsejit::cache;

KernelKey worker_key(int i) {
  KernelKey key;
  key.schema_version = kSchemaVersion;
  key.library_version = "test";
  key.template_name = "worker.cu";
  key.source_sha256 = sparsejit::sha256_hex("source " + std::to_string(i));
  key.options = "-default-device -std=c++17";
  key.arch = "sm_90";
  key.nvrtc_version = "13.0";
  return key;
}

std::vector<char> worker_binary(int i) { return sparsejit::test::fake_cubin("kernel " + std::to_string(i)); }

const DeviceKey kDevice{"Test GPU", 90, 13000, "test", 132};

// Worker w's r-th measured selection: its own pattern, two settings timed.
TuningRecord measured_record(int worker, int r) {
  TuningRecord record;
  record.kind = RecordKind::Measured;
  record.device = kDevice;
  record.op = "spmm";
  record.fingerprint = "0xw" + std::to_string(worker) + "r" + std::to_string(r);
  record.plan_key = "plan:spmm:f32:k32:n:ld4";
  record.model_version = "spmm-default v7 test";
  record.variant = "fast";
  record.time_ms = 1.0 + r;
  record.features = {{"nnz", 1000 + r}, {"k", 32}};
  record.timings = {{{"variant", "fast"}, {"params", nlohmann::json::object()}, {"ms", 1.0 + r}},
                    {{"variant", "slow"}, {"params", nlohmann::json::object()}, {"ms", 2.0 + r}}};
  return record;
}

// Finds every measured selection of `worker`; false when one is missing or differs.
bool finds_measured(CacheStore& store, int worker, int records) {
  for (int r = 0; r < records; ++r) {
    const TuningRecord want = measured_record(worker, r);
    const auto found = store.find_measured_record({want.device, want.fingerprint, want.plan_key, want.model_version});
    if (!found || found->timings != want.timings || found->features != want.features || found->time_ms != want.time_ms) {
      std::fprintf(stderr, "worker %d: measured selection %d %s\n", worker, r, found ? "differs" : "not found");
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool lookup_only = argc == 6 && std::string(argv[5]) == "--lookup-only";
  if (argc != 5 && !lookup_only) {
    std::fprintf(stderr, "usage: cache_worker DIR WORKER_ID KEYS RECORDS [--lookup-only]\n");
    return 3;
  }
  const std::string dir = argv[1];
  const int worker = std::stoi(argv[2]);
  const int keys = std::stoi(argv[3]);
  const int records = std::stoi(argv[4]);

  KernelCache cache(dir);
  if (lookup_only) {
    if (!finds_measured(cache.store(), worker, records)) return 4;
    cache.store().insert_tuning_record(measured_record(worker, records));
    return 0;
  }
  for (int n = 0; n < keys; ++n) {
    const int i = (n + worker) % keys;
    const CacheResult result = cache.get_or_compile(worker_key(i), [i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return CompiledBinary{worker_binary(i), 5.0};
    });
    if (*result.cubin != worker_binary(i)) {
      std::fprintf(stderr, "worker %d: wrong binary for key %d\n", worker, i);
      return 2;
    }
  }
  for (int r = 0; r < records; ++r) {
    TuningRecord record;
    record.device = kDevice;
    record.op = "spmm";
    record.feature_bucket = "bucket" + std::to_string(r % 3);
    record.variant = "w" + std::to_string(worker) + "-r" + std::to_string(r);
    record.params = {{"worker", worker}, {"record", r}};
    record.time_ms = 1.0 + r;
    record.checked = true;
    cache.store().insert_tuning_record(record);
    cache.store().insert_tuning_record(measured_record(worker, r));
  }
  return finds_measured(cache.store(), worker, records) ? 0 : 4;
}
