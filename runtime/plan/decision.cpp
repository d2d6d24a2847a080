#include "sparsejit/decision.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "sparsejit/error.hpp"

namespace sparsejit {

const char* to_string(Op op) {
  switch (op) {
    case Op::SpMM: return "spmm";
    case Op::SDDMM: return "sddmm";
    case Op::SpGEMM: return "spgemm";
    case Op::SpAMM: return "spamm";
  }
  return "?";
}

Op parse_op(const std::string& text) {
  if (text == "spmm") return Op::SpMM;
  if (text == "sddmm") return Op::SDDMM;
  if (text == "spgemm") return Op::SpGEMM;
  if (text == "spamm") return Op::SpAMM;
  throw InvalidInputError("unknown operation '" + text + "' (expected spmm, sddmm, spgemm or spamm)");
}

const char* to_string(DecisionSource source) {
  switch (source) {
    case DecisionSource::Forced: return "forced";
    case DecisionSource::Tuned: return "tuned";
    case DecisionSource::Model: return "model";
    case DecisionSource::Default: return "default";
    case DecisionSource::Measured: return "measured";
    case DecisionSource::Recorded: return "recorded";
  }
  return "?";
}

const char* to_string(KernelOrigin origin) {
  switch (origin) {
    case KernelOrigin::None: return "none";
    case KernelOrigin::Memory: return "memory";
    case KernelOrigin::Disk: return "disk";
    case KernelOrigin::Compiled: return "compiled";
  }
  return "?";
}

nlohmann::json to_json(const Decision& d) {
  nlohmann::json path = nlohmann::json::array();
  for (const auto& s : d.path)
    path.push_back({{"feature", s.feature}, {"value", s.value}, {"comparison", s.comparison},
                    {"threshold", s.threshold}, {"taken", s.taken}});
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& c : d.candidates) {
    // A value that does not exist is null: a rejected candidate was never priced (its 0 is no
    // prediction), one without a cost entry or only measured has none, one not timed no time.
    const bool priced = c.rejected_because.empty() && std::isfinite(c.predicted_ms);
    nlohmann::json j = {{"variant", c.variant},
                        {"params", c.params},
                        {"predicted_ms", priced ? nlohmann::json(c.predicted_ms) : nlohmann::json(nullptr)},
                        {"measured_ms", c.measured_ms >= 0 ? nlohmann::json(c.measured_ms) : nlohmann::json(nullptr)}};
    if (!c.rejected_because.empty()) j["rejected_because"] = c.rejected_because;
    else j["terms"] = c.terms;
    if (priced) j["correction"] = c.correction, j["regret"] = c.regret;
    candidates.push_back(j);
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const MeasureStep& s : d.measure_steps)
    steps.push_back({{"variant", s.variant}, {"params", s.params},
                     {"call_ms", std::isfinite(s.call_ms) ? nlohmann::json(s.call_ms) : nlohmann::json(nullptr)},
                     {"calls", s.calls}, {"host_ms", s.host_ms}});
  return {{"op", to_string(d.op)}, {"variant", d.variant}, {"params", d.params},
          {"source", to_string(d.source)}, {"model_id", d.model_id}, {"model_version", d.model_version},
          {"features", d.features}, {"path", path}, {"candidates", candidates},
          {"device", d.device}, {"sm", d.sm}, {"kernel_origin", to_string(d.kernel_origin)},
          {"compile_ms", d.compile_ms}, {"load_ms", d.load_ms}, {"measure_ms", d.measure_ms},
          {"measure_steps", steps}};
}

namespace {

// How the model's neighbour correction moved a candidate's price, when it did.
std::string correction_note(const Candidate& c) {
  if (c.correction == 1) return "";
  std::ostringstream note;
  note << std::setprecision(3) << " (the formula's price x " << c.correction << " from timed neighbours";
  if (c.regret != 1) note << ", x " << c.regret << " of it their regret";
  note << ")";
  return note.str();
}

}  // namespace

std::string describe(const Decision& d) {
  std::ostringstream out;
  out << std::setprecision(4);
  out << to_string(d.op) << ": " << d.variant << " " << d.params.dump() << "\n";
  out << "  source: " << to_string(d.source);
  if (!d.model_id.empty()) out << " (model " << d.model_id << " v" << d.model_version << ")";
  if (d.measure_ms > 0) out << ", shortlist timed in " << d.measure_ms << " ms";
  out << "\n  device: " << d.device << " (sm_" << d.sm << ")\n";
  if (!d.path.empty()) {
    out << "  decision path:\n";
    for (const auto& s : d.path)
      out << "    " << s.feature << " = " << s.value << " " << s.comparison << " " << s.threshold
          << (s.taken ? "  yes" : "  no") << "\n";
  }
  out << "  candidates:\n";
  for (const auto& c : d.candidates) {
    out << "    " << (c.variant == d.variant ? "* " : "  ") << std::left << std::setw(20) << c.variant;
    if (!c.rejected_because.empty()) out << " rejected: " << c.rejected_because;
    else if (std::isfinite(c.predicted_ms)) out << " predicted " << c.predicted_ms << " ms" << correction_note(c);
    else out << " " << c.params.dump() << " (not priced)";
    if (c.measured_ms >= 0) out << ", measured " << c.measured_ms << " ms";
    out << "\n";
  }
  if (!d.measure_steps.empty()) out << "  timed, in order (host ms of each step, calls run):\n";
  for (const MeasureStep& s : d.measure_steps)
    out << "    " << std::left << std::setw(20) << s.variant << " " << s.params.dump() << ": " << s.host_ms << " ms, "
        << s.calls << " calls\n";
  out << "  kernel: " << to_string(d.kernel_origin);
  if (d.kernel_origin == KernelOrigin::Compiled) out << " in " << d.compile_ms << " ms";
  if (d.kernel_origin == KernelOrigin::Disk || d.kernel_origin == KernelOrigin::Memory) out << ", loaded in " << d.load_ms << " ms";
  out << "\n";
  return out.str();
}

}  // namespace sparsejit
