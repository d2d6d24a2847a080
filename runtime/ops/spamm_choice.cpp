#include "ops/spamm_choice.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::ops {

namespace {

bool is_vendor(const std::string& variant) { return variants::SpammRegistry::find(variant)->traits.vendor; }

bool eligible(const Candidate& c) { return c.rejected_because.empty() && std::isfinite(c.predicted_ms) && c.predicted_ms > 0; }

// The model's decision turned to one of its candidates.
Decision taking(const Decision& model, const Candidate& candidate) {
  Decision d = model;
  d.variant = candidate.variant;
  d.params = candidate.params;
  return d;
}

float fastest(const std::vector<float>& ms) { return *std::min_element(ms.begin(), ms.end()); }

}  // namespace

bool SpammChoice::Comparison::wants(Side side) const {
  const bool tile = side == Side::Tile;
  return int((tile ? tile_ms : vendor_ms).size()) + (tile ? tile_pending : vendor_pending) < kSamples;
}

SpammChoice::Side SpammChoice::Comparison::faster() const {
  if (int(tile_ms.size()) < kSamples || int(vendor_ms.size()) < kSamples) return Side::None;
  return fastest(vendor_ms) <= fastest(tile_ms) ? Side::Vendor : Side::Tile;  // a tie takes the exact product
}

void SpammChoice::forget() {
  vendor_.reset();
  calls_since_check_ = 0;
  comparison_.reset();
  ++generation_;  // samples still in flight belong to nothing now
}

std::unique_ptr<TimedCall> SpammChoice::timing() {
  if (spare_.empty()) return std::make_unique<TimedCall>(context_);
  std::unique_ptr<TimedCall> t = std::move(spare_.back());
  spare_.pop_back();
  return t;
}

void SpammChoice::collect() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!it->timing->end.done()) {
      ++it;
      continue;
    }
    const float ms = elapsed_ms(it->timing->start, it->timing->end);
    if (comparison_ && it->generation == generation_) {
      const bool tile = it->side == Side::Tile;
      (tile ? comparison_->tile_ms : comparison_->vendor_ms).push_back(ms);
      --(tile ? comparison_->tile_pending : comparison_->vendor_pending);
    }
    spare_.push_back(std::move(it->timing));
    it = pending_.erase(it);
  }
}

// The compared side with both sides' times on its candidates, source Measured.
Decision SpammChoice::annotated(Decision d) const {
  d.source = DecisionSource::Measured;
  for (Candidate& c : d.candidates) {
    if (c.variant == comparison_->tile.variant) c.measured_ms = fastest(comparison_->tile_ms);
    if (c.variant == comparison_->vendor.variant) c.measured_ms = fastest(comparison_->vendor_ms);
  }
  return d;
}

SpammChoice::Call SpammChoice::begin(CUdeviceptr a, CUdeviceptr b, double tau, CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (a != a_ || b != b_ || tau != tau_) {
    forget();
    a_ = a;
    b_ = b;
    tau_ = tau;
  }
  collect();
  if (!vendor_ && comparison_ && comparison_->faster() == Side::Vendor) {  // the verdict, as soon as it is in
    vendor_ = annotated(comparison_->vendor);
    calls_since_check_ = 0;
  }
  Call call;
  if (vendor_ && ++calls_since_check_ < kRecheckEvery) {
    call.before_norms = vendor_;
    call.remembered_calls = calls_since_check_;
    return call;
  }
  if (comparison_ && !comparison_->wants(Side::Tile) && comparison_->wants(Side::Vendor)) {
    call.before_norms = comparison_->vendor;
    call.timed = Side::Vendor;
    call.generation = generation_;
    ++comparison_->vendor_pending;
  }
  // A call may still turn out a tile sample after its norms: its start is recorded now.
  if (call.timed == Side::Vendor || !comparison_ || comparison_->wants(Side::Tile)) {
    call.timing = timing();
    call.timing->start.record(stream);
  }
  return call;
}

Decision SpammChoice::after_norms(Call& call, Decision model, double share) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comparison_ && std::abs(share - comparison_->share) > kSameShare * comparison_->share) {
    comparison_.reset();  // the values changed under the same buffers: compare again
    ++generation_;
  }
  if (!comparison_) {
    const Candidate* vendor = nullptr;
    const Candidate* tile = nullptr;
    for (const Candidate& c : model.candidates) {
      if (!eligible(c)) continue;
      if (is_vendor(c.variant)) vendor = vendor ? vendor : &c;
      else if (!tile || c.predicted_ms < tile->predicted_ms) tile = &c;
    }
    const bool close = vendor && tile &&
                       std::max(vendor->predicted_ms, tile->predicted_ms) < kCloseCall * std::min(vendor->predicted_ms, tile->predicted_ms);
    if (!close) {
      vendor_ = is_vendor(model.variant) ? std::optional<Decision>(model) : std::nullopt;
      calls_since_check_ = 0;
      return model;
    }
    comparison_ = Comparison{taking(model, *tile), taking(model, *vendor), share, {}, {}, 0, 0};
  }
  Comparison& c = *comparison_;
  if (call.timing && c.wants(Side::Tile)) {
    call.timed = Side::Tile;
    call.generation = generation_;
    ++c.tile_pending;
    Decision d = c.tile;
    d.features = model.features;
    return d;
  }
  const Side faster = c.faster();
  if (faster == Side::None) return model;  // samples still in flight
  Decision d = annotated(faster == Side::Vendor ? c.vendor : c.tile);
  d.features = model.features;
  vendor_ = faster == Side::Vendor ? std::optional<Decision>(d) : std::nullopt;
  calls_since_check_ = 0;
  return d;
}

void SpammChoice::end(Call& call, bool prepared_now, CUstream stream) {
  if (!call.timing) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (call.timed != Side::None && comparison_ && call.generation == generation_) {
    if (!prepared_now) {
      call.timing->end.record(stream);
      pending_.push_back({std::move(call.timing), call.timed, generation_});
      return;
    }
    --(call.timed == Side::Tile ? comparison_->tile_pending : comparison_->vendor_pending);  // no sample
  }
  spare_.push_back(std::move(call.timing));
}

}  // namespace sparsejit::ops
