// `sparsejit soak`: threads × runtimes × the mixed problems of soak_calls.cpp for a set time,
// memory sampled throughout, then a summary and a verdict (exit 1 on any failure or growth).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/json_lines.hpp"
#include "cli/soak.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cli::soak {

namespace {

constexpr std::array<Op, 4> kOps = {Op::SpMM, Op::SDDMM, Op::SpGEMM, Op::SpAMM};
constexpr std::size_t kMaxKeptFailures = 20;  // enough to see a pattern; a lost context fails every call

struct Args {
  int seconds = 300;
  int threads = 8;
  int runtimes = 2;
  int warmup_seconds = -1;  // -1: a tenth of the run
  uint64_t seed = 1;
  std::string json_out;
};

std::size_t op_index(Op op) { return std::size_t(std::find(kOps.begin(), kOps.end(), op) - kOps.begin()); }

double mib(double bytes) { return bytes / double(1 << 20); }

// The soak itself: worker threads until the time is up or a call fails, and the calling thread
// sampling memory in between.
class Soak {
 public:
  Soak(const Args& args, std::vector<Runtime*> runtimes) : args_(args), runtimes_(std::move(runtimes)) {}

  void run() {
    start_ = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < args_.threads; ++t) workers.emplace_back([this, t] { work(t); });
    sample_until_done();
    for (std::thread& w : workers) w.join();
    take_sample();  // after every call has returned
  }

  const std::vector<MemorySample>& samples() const { return samples_; }
  const std::vector<std::string>& failures() const { return failures_; }
  int64_t calls(Op op) const { return calls_[op_index(op)]; }
  int64_t failed(Op op) const { return failed_[op_index(op)]; }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  // Every interval (a 60th of the run, 1 to 10 s) one sample and one line, until the time is up
  // or a worker has failed.
  void sample_until_done() {
    using std::chrono::steady_clock;
    const auto interval = std::chrono::duration_cast<steady_clock::duration>(
        std::chrono::duration<double>(std::clamp(args_.seconds / 60.0, 1.0, 10.0)));
    const auto end = start_ + std::chrono::seconds(args_.seconds);
    std::unique_lock<std::mutex> lock(mutex_);
    take_sample_locked();
    while (!stop_ && steady_clock::now() < end) {
      wake_.wait_until(lock, std::min(end, steady_clock::now() + interval), [this] { return stop_; });
      take_sample_locked();
    }
    stop_ = true;
  }

  void take_sample() {
    std::lock_guard<std::mutex> lock(mutex_);
    take_sample_locked();
  }

  void take_sample_locked() {
    MemorySample s;
    s.seconds = elapsed();
    for (Op op : kOps) s.calls += calls(op);
    s.rss_bytes = resident_bytes();
    try {
      s.device_bytes = int64_t(runtimes_[0]->device().total_mem - runtimes_[0]->context().free_bytes());
    } catch (const Error& e) {  // a lost context: the workers report it too
      record_failure_locked(std::string("sampling device memory: ") + e.what());
    }
    samples_.push_back(s);
    std::printf("soak: %6.1f s  %9lld calls  rss %8.1f MiB  device %8.1f MiB\n", s.seconds, (long long)s.calls,
                mib(double(s.rss_bytes)), mib(double(s.device_bytes)));
    std::fflush(stdout);
  }

  void work(int index) {
    std::mt19937_64 rng(args_.seed * 1000003 + uint64_t(index));
    try {
      const Stream stream = Stream::non_blocking(runtimes_[0]->context());
      while (!stopped()) run_one(draw_problem(rng, int(runtimes_.size())), stream);
    } catch (const std::exception& e) {  // the stream could not be made
      record_failure(std::string("worker ") + std::to_string(index) + ": " + e.what());
    }
  }

  void run_one(const Problem& problem, const Stream& stream) {
    try {
      calls_[op_index(problem.op)] += run_checked(runtimes_, problem, stream);
      return;
    } catch (const Mismatch& e) {
      record_failure(describe(problem) + ": " + e.what());
    } catch (const Error& e) {
      record_failure(describe(problem) + ": " + to_string(e.category()) + " error: " + e.what());
    } catch (const std::exception& e) {
      record_failure(describe(problem) + ": error: " + e.what());
    }
    ++failed_[op_index(problem.op)];
  }

  bool stopped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }

  // The first failure stops the soak: every thread ends its call and the report follows.
  void record_failure(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    record_failure_locked(message);
  }

  void record_failure_locked(const std::string& message) {
    if (failures_.size() < kMaxKeptFailures) failures_.push_back(message);
    std::fprintf(stderr, "soak: FAILED %s\n", message.c_str());
    stop_ = true;
    wake_.notify_all();
  }

  const Args& args_;
  const std::vector<Runtime*> runtimes_;
  std::chrono::steady_clock::time_point start_;
  std::array<std::atomic<int64_t>, kOps.size()> calls_{}, failed_{};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<MemorySample> samples_;
  std::vector<std::string> failures_;
};

nlohmann::ordered_json growth_json(const Growth& g) {
  return {{"first", g.first}, {"last", g.last},   {"max", g.max},       {"baseline", g.baseline},
          {"final", g.final}, {"limit", g.limit}, {"judged", g.judged}, {"grew", g.grew}};
}

const char* verdict(const Growth& g) {
  if (!g.judged) return "not judged (under two samples after the warm-up)";
  return g.grew ? "GREW" : "steady";
}

void print_growth(const char* name, const Growth& g) {
  std::printf("%-12s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f  %s\n", name, mib(double(g.first)), mib(double(g.last)),
              mib(double(g.max)), mib(g.baseline), mib(g.final), mib(g.limit), verdict(g));
}

// The closing table: calls and failures per op, then memory, then the failures kept.
void print_summary(const Soak& soak, const Growth& rss, const Growth& device) {
  std::printf("\n%-8s %10s %9s\n", "op", "calls", "failures");
  for (Op op : kOps)
    std::printf("%-8s %10lld %9lld\n", to_string(op), (long long)soak.calls(op), (long long)soak.failed(op));
  std::printf("\n%-12s %9s %9s %9s %9s %9s %9s  %s\n", "memory MiB", "first", "last", "max", "baseline", "final", "limit",
              "verdict");
  print_growth("rss", rss);
  print_growth("device", device);
  for (const std::string& f : soak.failures()) std::printf("failure: %s\n", f.c_str());
}

nlohmann::ordered_json record(const Args& args, const Runtime& rt, const Soak& soak, const Growth& rss, const Growth& device,
                              int warmup) {
  nlohmann::ordered_json calls, failed, samples = nlohmann::json::array();
  for (Op op : kOps) {
    calls[to_string(op)] = soak.calls(op);
    failed[to_string(op)] = soak.failed(op);
  }
  for (const MemorySample& s : soak.samples())
    samples.push_back(
        {{"seconds", s.seconds}, {"calls", s.calls}, {"rss_bytes", s.rss_bytes}, {"device_bytes", s.device_bytes}});
  return {{"format_version", kJsonFormatVersion}, {"device", rt.device().name}, {"date", utc_now()},
          {"seconds", args.seconds}, {"threads", args.threads}, {"runtimes", args.runtimes}, {"warmup_seconds", warmup},
          {"seed", args.seed}, {"calls", calls}, {"failures", failed}, {"failure_messages", soak.failures()},
          {"rss", growth_json(rss)}, {"device_memory", growth_json(device)}, {"samples", samples},
          {"passed", soak.failures().empty() && !rss.grew && !device.grew}};
}

void run_soak(const Args& args) {
  const int warmup = args.warmup_seconds < 0 ? args.seconds / 10 : args.warmup_seconds;
  if (warmup >= args.seconds)
    throw InvalidInputError("soak: --warmup-seconds " + std::to_string(warmup) + " leaves nothing of --seconds " +
                            std::to_string(args.seconds) + " to judge memory on");
  const std::unique_ptr<std::ofstream> json_out = open_json_out("soak", args.json_out);
  if (!driver_available()) throw UnsupportedError(driver_unavailable_reason());
  std::vector<std::unique_ptr<Runtime>> owned;
  std::vector<Runtime*> runtimes;
  for (int r = 0; r < args.runtimes; ++r) runtimes.push_back(owned.emplace_back(std::make_unique<Runtime>(0)).get());
  std::printf("soak: %d s, %d threads, %d runtimes on %s; memory judged after %d s\n", args.seconds, args.threads,
              args.runtimes, to_string(runtimes[0]->device()).c_str(), warmup);
  Soak soak(args, runtimes);
  soak.run();
  const Growth rss = judge_growth(soak.samples(), &MemorySample::rss_bytes, warmup, kRssFloorBytes);
  const Growth device = judge_growth(soak.samples(), &MemorySample::device_bytes, warmup, kDeviceFloorBytes);
  print_summary(soak, rss, device);
  if (json_out) *json_out << record(args, *runtimes[0], soak, rss, device, warmup).dump() << std::endl;
  if (json_out && !*json_out) throw IoError("soak: writing --json-out '" + args.json_out + "' failed");
  if (!soak.failures().empty())
    throw std::runtime_error("soak: a call failed (the first failure: " + soak.failures().front() + ")");
  if (rss.grew || device.grew)
    throw std::runtime_error(std::string("soak: memory grew after the warm-up (") + (rss.grew ? "rss" : "") +
                             (rss.grew && device.grew ? ", " : "") + (device.grew ? "device" : "") + "; see the table)");
}

}  // namespace

}  // namespace sparsejit::cli::soak

namespace sparsejit::cli {

void add_soak_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("soak", "Threads sharing runtimes run mixed ops, each result checked; memory sampled over "
                                         "time; exit 1 on a failure or growth");
  static soak::Args args;
  cmd->add_option("--seconds", args.seconds, "How long to run")->capture_default_str()->check(CLI::Range(1, 7 * 24 * 3600));
  cmd->add_option("--threads", args.threads, "Threads calling the runtimes")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--runtimes", args.runtimes, "Runtimes on GPU 0 the threads share")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_option("--warmup-seconds", args.warmup_seconds,
                  "Memory before this is not judged (compiles, module loads, caches and pools filling); default a tenth "
                  "of --seconds")
      ->check(CLI::Range(0, 7 * 24 * 3600));
  cmd->add_option("--seed", args.seed, "Seed of the threads' draws (each draw has its own seed, printed with a failure)")
      ->capture_default_str();
  cmd->add_option("--json-out", args.json_out, "Also append the summary and every sample to this file as one JSON line");
  cmd->callback([] { soak::run_soak(args); });
}

}  // namespace sparsejit::cli
