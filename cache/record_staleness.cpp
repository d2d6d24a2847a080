// When a measured-selection record is stale: the rule `cache list --records` shows and
// `cache prune` applies. The runtime never needs it: it looks records up by their exact key,
// so a stale record is simply never found.
#include <tuple>

#include "sparsejit/cache.hpp"

namespace sparsejit::cache {
namespace {

auto as_tuple(const DeviceKey& k) {
  return std::tie(k.device_name, k.compute_capability, k.driver_version, k.library_version, k.multiprocessors);
}

// "NVIDIA H100 (sm_90, 132 SMs)"
std::string describe_device(const DeviceKey& k) {
  return k.device_name + " (sm_" + std::to_string(k.compute_capability) + ", " + std::to_string(k.multiprocessors) + " SMs)";
}

bool same_gpu(const DeviceKey& a, const DeviceKey& b) {
  return a.device_name == b.device_name && a.compute_capability == b.compute_capability &&
         a.multiprocessors == b.multiprocessors;
}

// The reason a record of a GPU present here is stale: its driver, or the model its op plans
// with now; empty when neither.
std::vector<std::string> against_device(const RecordEntry& record, const RecordContext::Device& device) {
  if (record.device.driver_version != device.key.driver_version)
    return {"driver_version: record " + std::to_string(record.device.driver_version) + ", this GPU's driver " +
            std::to_string(device.key.driver_version)};
  const auto model = device.model_versions.find(record.op);
  if (model != device.model_versions.end() && model->second != record.model_version)
    return {"model_version: record '" + record.model_version + "', " + record.op + " plans with '" + model->second + "'"};
  return {};
}

}  // namespace

bool DeviceKey::operator==(const DeviceKey& other) const { return as_tuple(*this) == as_tuple(other); }

std::vector<std::string> record_staleness(const RecordEntry& record, const RecordContext& context) {
  std::vector<std::string> reasons;
  if (!context.library_version.empty() && record.device.library_version != context.library_version)
    reasons.push_back("library_version: record '" + record.device.library_version + "', this build '" +
                      context.library_version + "'");
  if (!context.devices) return reasons;
  for (const RecordContext::Device& device : *context.devices) {
    if (!same_gpu(record.device, device.key)) continue;
    for (std::string& reason : against_device(record, device)) reasons.push_back(std::move(reason));
    return reasons;
  }
  reasons.push_back("device: no GPU here is " + describe_device(record.device));
  return reasons;
}

}  // namespace sparsejit::cache
