#include "jit/render.hpp"

#include <kainjow/mustache.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "jit/embedded_templates.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::jit {
namespace {

namespace mu = kainjow::mustache;
namespace fs = std::filesystem;

constexpr const char* kTemplateSuffix = ".mustache";

// SPARSEJIT_TEMPLATE_DIR, or empty when templates come from the library itself.
std::string template_dir() {
  const char* dir = std::getenv("SPARSEJIT_TEMPLATE_DIR");
  return dir == nullptr ? std::string() : std::string(dir);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

mu::data to_mustache(const nlohmann::json& value, const std::string& path) {
  switch (value.type()) {
    case nlohmann::json::value_t::boolean: return mu::data(value.get<bool>());
    case nlohmann::json::value_t::string: return mu::data(value.get<std::string>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return mu::data(value.dump());
    case nlohmann::json::value_t::object: {
      mu::data object(mu::data::type::object);
      for (auto it = value.begin(); it != value.end(); ++it) {
        object.set(it.key(), to_mustache(it.value(), path + "." + it.key()));
      }
      return object;
    }
    case nlohmann::json::value_t::array: {
      mu::data list(mu::data::type::list);
      for (size_t i = 0; i < value.size(); ++i) list.push_back(to_mustache(value[i], path + "[" + std::to_string(i) + "]"));
      return list;
    }
    default:
      throw InvalidInputError("template param '" + path + "' has JSON type " + value.type_name() +
                              "; use a string, number, bool, list or object");
  }
}

// A mustache context that remembers every name it could not resolve, and resolves partials
// from the template source, so a missing value is an error instead of an empty string.
class StrictContext : public mu::context<std::string> {
 public:
  explicit StrictContext(const mu::data* root) : mu::context<std::string>(root) {}

  const mu::data* get(const std::string& name) const override {
    const mu::data* found = mu::context<std::string>::get(name);
    if (found == nullptr) missing_.insert(name);
    return found;
  }

  const mu::data* get_partial(const std::string& name) const override {
    auto it = partials_.find(name);
    if (it == partials_.end()) {
      try {
        it = partials_.emplace(name, mu::data(template_text(name))).first;
      } catch (const InvalidInputError& e) {
        missing_partial_ = e.what();
        return nullptr;
      }
    }
    return &it->second;
  }

  const std::set<std::string>& missing() const { return missing_; }
  const std::string& missing_partial() const { return missing_partial_; }

 private:
  mutable std::set<std::string> missing_;
  mutable std::string missing_partial_;
  mutable std::map<std::string, mu::data> partials_;
};

}  // namespace

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  const std::string dir = template_dir();
  if (dir.empty()) {
    for (const auto& t : embedded_templates()) names.emplace_back(t.name);
  } else {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      const size_t suffix = file.size() >= 9 ? file.size() - 9 : std::string::npos;
      if (suffix != std::string::npos && file.compare(suffix, 9, kTemplateSuffix) == 0) {
        names.push_back(file.substr(0, suffix));
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string template_text(const std::string& name) {
  const std::string dir = template_dir();
  if (dir.empty()) {
    for (const auto& t : embedded_templates()) {
      if (name == t.name) return t.text;
    }
  } else {
    std::ifstream in(fs::path(dir) / (name + kTemplateSuffix), std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      return text.str();
    }
  }
  const std::string where = dir.empty() ? "embedded templates" : "SPARSEJIT_TEMPLATE_DIR=" + dir;
  throw InvalidInputError("unknown kernel template '" + name + "' (" + where +
                          "; known: " + join(template_names()) + ")");
}

std::string render(const KernelSpec& spec) {
  if (!spec.params.is_object()) {
    throw InvalidInputError("params of template '" + spec.template_name + "' must be a JSON object, got " +
                            spec.params.dump());
  }
  nlohmann::json params = spec.params;
  if (!params.contains("kernel_name") && !spec.kernel_name.empty()) params["kernel_name"] = spec.kernel_name;

  mu::mustache tmpl(template_text(spec.template_name));
  if (!tmpl.is_valid()) {
    throw CompileError("template '" + spec.template_name + "' does not parse: " + tmpl.error_message(), "", "");
  }
  // The output is CUDA source, not HTML: values go in verbatim.
  tmpl.set_custom_escape([](const std::string& s) { return s; });

  const mu::data root = to_mustache(params, "params");
  StrictContext context(&root);
  const std::string source = tmpl.render(context);
  if (!tmpl.is_valid()) {
    throw CompileError("template '" + spec.template_name + "' failed to render: " + tmpl.error_message(), "", "");
  }
  if (!context.missing_partial().empty()) {
    throw InvalidInputError("template '" + spec.template_name + "': partial not found: " + context.missing_partial());
  }
  if (!context.missing().empty()) {
    std::vector<std::string> names(context.missing().begin(), context.missing().end());
    throw InvalidInputError("template '" + spec.template_name + "' needs param(s) missing from params: " +
                            join(names) + " (params given: " + params.dump() + ")");
  }
  return source;
}

}  // namespace sparsejit::jit
