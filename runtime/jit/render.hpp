// Rendering kernel templates (kainjow mustache) into CUDA source.
//
// Template source: the templates embedded at build time (templates/*.mustache), unless
// SPARSEJIT_TEMPLATE_DIR is set; then DIR/<name>.mustache is read at every render (for
// template development without rebuilding).
//
// Strictness: templates are logic-less and the planner must provide every value. Rendering
// fails with InvalidInputError naming the variable when a {{name}}, {{#name}} or {{^name}} tag
// that is actually reached has no value in params (a tag inside a section that is skipped is
// not reached, so e.g. vec_t is only needed when vec4 is true). Values are not HTML-escaped.
// A bool rendered as {{name}} renders nothing: use bools only as sections.
// Partials ({{>common_types.cuh}}) are other templates from the same source.
#pragma once
#include <string>
#include <vector>

#include "jit/kernel_spec.hpp"

namespace sparsejit::jit {

// Names of the templates available now (embedded, or in SPARSEJIT_TEMPLATE_DIR), sorted.
std::vector<std::string> template_names();

// The raw text of one template; InvalidInputError naming it and listing the known names when
// there is no such template.
std::string template_text(const std::string& name);

// Renders spec.template_name with spec.params (plus kernel_name from the spec when params
// has none). Throws InvalidInputError for an unknown template or partial, a missing value or
// a null param, and CompileError for a template
// that does not parse (e.g. an unclosed section), with the mustache error in the message.
std::string render(const KernelSpec& spec);

}  // namespace sparsejit::jit
