// What row_gather and panel_gather share: a lane group holds one row chunk's A row in
// registers (lane_vectors vectors per lane) and gathers the chunk's B rows, unroll nonzeros in
// flight; panel_gather cuts the chunks by row band x column panel. Same parameters, same
// checks, one kernel spec shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/kernel_spec.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"

namespace sparsejit::variants::sddmm {

// Beyond this many A vectors per lane the row no longer fits registers: row_gather declines.
inline constexpr int64_t kMaxLaneVectors = 16;

// A vectors each lane holds (K over group_size lanes of vector_width elements).
int64_t row_lane_vectors(int64_t k, int64_t width, int64_t group);
// The same for a row_gather or panel_gather kernel's parameters: ceil(k / (vector_width * group_size)).
int64_t row_lane_vectors(const nlohmann::json& params, int32_t k);

// Why neither can run K: more than kMaxLaneVectors A vectors per lane of 32; or "".
std::string lane_vectors_rejection(const plan::SddmmProblem& p);

// What both take for a lane group of `group`: as many nonzeros in flight as keeps unroll *
// lane_vectors B vectors per lane at about `loads_in_flight` (at most the model's unroll), and
// the model's max_nnz and block size for `variant`.
nlohmann::json gather_defaults(const plan::SddmmProblem& p, const nlohmann::json& model, const std::string& variant, int64_t group,
                               int64_t loads_in_flight);

// row_gather's parameters, which panel_gather shares.
void check_row_gather(const nlohmann::json& params, const plan::SddmmProblem& p, const std::string& variant);

// Measured selection's changes of the lane group: half of it (unroll at most the new group)
// and twice it.
std::vector<nlohmann::json> group_changes(const nlohmann::json& params);

// row_gather (sddmm_row.cu) or panel_gather (sddmm_row_panels.cu): the same parameters.
jit::KernelSpec gather_spec(const Decision& d, DType dtype, int32_t k, const std::string& template_name,
                            const std::string& kernel_name);

}  // namespace sparsejit::variants::sddmm
