// One of several processes sharing a cache directory (spawned by cache_test):
//   cache_worker DIR WORKER_ID KEYS RECORDS
// asks for KEYS kernels (fake compile, distinct bytes per key) in an order that differs per
// worker, checks every binary it gets, and inserts RECORDS tuning records. Exit status 0
// when everything matched, 2 on a wrong binary, 3 on bad arguments.
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: cache_worker DIR WORKER_ID KEYS RECORDS\n");
    return 3;
  }
  const std::string dir = argv[1];
  const int worker = std::stoi(argv[2]);
  const int keys = std::stoi(argv[3]);
  const int records = std::stoi(argv[4]);

  KernelCache cache(dir);
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
    record.device = {"Test GPU", 90, 13000, "test"};
    record.op = "spmm";
    record.feature_bucket = "bucket" + std::to_string(r % 3);
    record.variant = "w" + std::to_string(worker) + "-r" + std::to_string(r);
    record.params = {{"worker", worker}, {"record", r}};
    record.time_ms = 1.0 + r;
    record.checked = true;
    cache.store().insert_tuning_record(record);
  }
  return 0;
}
