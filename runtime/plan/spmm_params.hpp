// Names of the SpMM planner's rs parameters that code outside the planner reads: the keys of
// Decision::params, of forced Options::params and of tuning records. One constant per name,
// so the planner's search space (plan/spmm.cpp), the ranking of tuned candidates
// (plan/tuned.cpp) and the trainer (tuner/train.cpp, tuner/tune.cpp) cannot spell one
// differently. What each means and how its default is chosen: plan/spmm.cpp.
#pragma once

namespace sparsejit::plan::spmm_param {

inline constexpr const char* kPanelWidth = "panel_width";  // W: columns per panel (RS-SpMM 3.1)
inline constexpr const char* kThreshold = "threshold";     // T: a row segment with >= T nonzeros is heavy
inline constexpr const char* kCfH = "cf_h";                // CF_H: vectors per lane, light (horizontal) kernel
inline constexpr const char* kCfV = "cf_v";                // CF_V: vectors per lane, heavy (vertical) kernel

}  // namespace sparsejit::plan::spmm_param
