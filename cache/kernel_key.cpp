#include <tuple>

#include "base/nvrtc_target.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::cache {
namespace {

auto as_tuple(const KernelKey& k) {
  return std::tie(k.schema_version, k.library_version, k.template_name, k.source_sha256, k.options, k.arch,
                  k.nvrtc_version);
}

void compare(std::vector<std::string>& out, const char* column, const std::string& entry, const std::string& wanted) {
  if (!wanted.empty() && entry != wanted) {
    out.push_back(std::string(column) + ": entry '" + entry + "', wanted '" + wanted + "'");
  }
}

}  // namespace

bool KernelKey::operator==(const KernelKey& other) const { return as_tuple(*this) == as_tuple(other); }
bool KernelKey::operator<(const KernelKey& other) const { return as_tuple(*this) < as_tuple(other); }

std::string KernelKey::to_string() const {
  return template_name + " " + arch + " sha256=" + source_sha256.substr(0, 12) + " nvrtc " + nvrtc_version +
         " lib " + library_version + " schema " + std::to_string(schema_version) + " [" + options + "]";
}

const char* to_string(KernelSource source) {
  switch (source) {
    case KernelSource::Memory: return "memory";
    case KernelSource::Disk: return "disk";
    case KernelSource::Compiled: return "compiled";
  }
  return "unknown";
}

std::vector<std::string> key_mismatches(const KernelKey& entry, const KernelKey& wanted) {
  std::vector<std::string> out;
  if (wanted.schema_version != 0 && entry.schema_version != wanted.schema_version) {
    out.push_back("schema_version: entry " + std::to_string(entry.schema_version) + ", wanted " +
                  std::to_string(wanted.schema_version));
  }
  compare(out, "library_version", entry.library_version, wanted.library_version);
  compare(out, "template_name", entry.template_name, wanted.template_name);
  compare(out, "source_sha256", entry.source_sha256, wanted.source_sha256);
  compare(out, "options", entry.options, wanted.options);
  compare(out, "arch", entry.arch, wanted.arch);
  compare(out, "nvrtc_version", entry.nvrtc_version, wanted.nvrtc_version);
  return out;
}

KernelKey current_key_context(int sm) {
  KernelKey key;
  key.schema_version = kSchemaVersion;
  key.library_version = SPARSEJIT_VERSION;
  key.nvrtc_version = nvrtc_version();
  if (sm > 0) key.arch = arch_name(sm);
  return key;
}

}  // namespace sparsejit::cache
