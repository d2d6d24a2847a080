#include "ops/plan_sources.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include "base/log.hpp"
#include "base/sha256.hpp"
#include "jit/compiler.hpp"
#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit::ops {

namespace {

int process_driver_version() {
  static const int version = driver_available() ? device_info(0).driver_version : 0;
  return version;
}

std::string key_text(const cache::DeviceKey& k) {
  return k.device_name + "\n" + std::to_string(k.compute_capability) + "\n" + std::to_string(k.driver_version) + "\n" +
         k.library_version + "\n" + std::to_string(k.multiprocessors);
}

// The database tuning data is read from, or nullptr when the disk cache is disabled.
cache::CacheStore* tuning_store() {
  if (!cache::default_cache_dir()) return nullptr;
  return &jit::default_compiler().cache().store();
}

struct Memo {
  std::mutex mutex;
  std::map<std::string, std::optional<plan::TunedChoice>> choices;
  std::map<std::string, std::shared_ptr<const nlohmann::json>> models;
  std::map<std::string, std::string> model_versions;
};
Memo& memo() {
  static Memo m;
  return m;
}

}  // namespace

cache::DeviceKey device_key(const plan::DeviceTarget& device) {
  return {device.name, device.sm, process_driver_version(), cache::current_key_context().library_version,
          device.multiprocessors};
}

std::optional<plan::TunedChoice> tuned_choice(Op op, const plan::DeviceTarget& device, const std::string& bucket) {
  cache::CacheStore* store = tuning_store();
  if (!store) return std::nullopt;
  const cache::DeviceKey key = device_key(device);
  const std::string memo_key = key_text(key) + "\n" + to_string(op) + "\n" + bucket;
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto it = m.choices.find(memo_key);
  if (it != m.choices.end()) return it->second;
  std::optional<plan::TunedChoice> choice;
  if (const auto best = plan::best_over_cases(plan::case_times(store->find_tuning_records(key, to_string(op), bucket))))
    choice = plan::TunedChoice{best->variant, best->params, bucket, best->cases};
  m.choices[memo_key] = choice;
  return choice;
}

std::shared_ptr<const nlohmann::json> planner_model_in(cache::CacheStore* store, Op op, const plan::DeviceTarget& device) {
  const std::string name = plan::tuned_model_name(op);
  if (store)
    if (const auto tuned = store->find_model(name, device_key(device))) {
      if (const auto problem = models::model_problem(tuned->json, models::shipped_model(name)))
        log(LogLevel::Warn, "tuned model '" + name + "' of " + device.name + " is unusable (" + *problem + "); using the shipped model");
      else
        return std::make_shared<const nlohmann::json>(tuned->json);
    }
  return std::make_shared<const nlohmann::json>(models::shipped_model(name));
}

std::shared_ptr<const nlohmann::json> planner_model(Op op, const plan::DeviceTarget& device) {
  cache::CacheStore* store = tuning_store();
  if (!store) return planner_model_in(nullptr, op, device);
  const std::string memo_key = key_text(device_key(device)) + "\n" + plan::tuned_model_name(op);
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto& model = m.models[memo_key];
  if (!model) model = planner_model_in(store, op, device);
  return model;
}

std::string model_version(const nlohmann::json& model) {
  return model.value("id", std::string("?")) + " v" + model.value("version", std::string("?")) + " " +
         sha256_hex(model.dump()).substr(0, 12);
}

std::string planner_model_version(Op op, const plan::DeviceTarget& device) {
  const std::shared_ptr<const nlohmann::json> model = planner_model(op, device);
  const std::string memo_key = key_text(device_key(device)) + "\n" + plan::tuned_model_name(op);
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  // The digest of a model's JSON is worth computing once: every plan that may take a record asks.
  auto& version = m.model_versions[memo_key];
  if (version.empty()) version = model_version(*model);
  return version;
}

void forget_tuned_lookups() {
  Memo& m = memo();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.choices.clear();
  m.models.clear();
  m.model_versions.clear();
}

plan::PlanSources plan_sources(Op op, const plan::DeviceTarget& device) {
  return {planner_model(op, device), [op, device](const std::string& bucket) { return tuned_choice(op, device, bucket); }};
}

Options with_environment_force(Op op, const Options& options) {
  if (options.forces_variant()) return options;
  const char* env = std::getenv("SPARSEJIT_FORCE");
  if (env == nullptr || *env == '\0') return options;
  const ForcedChoice choice = parse_force(env);
  if (choice.op != op) return options;  // forces another op only
  Options forced = options;
  forced.variant = choice.variant;
  forced.params = choice.params;
  return forced;
}

}  // namespace sparsejit::ops
