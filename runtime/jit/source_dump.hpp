// Writing rendered kernel sources to disk for inspection (SPARSEJIT_DUMP_SOURCE=DIR).
#pragma once
#include <string>

namespace sparsejit::jit {

// When SPARSEJIT_DUMP_SOURCE is set, writes the source to DIR/<program>-<sha256 prefix>.cu
// and returns the path; otherwise returns "". Failing to write is logged, never thrown.
std::string dump_source_if_requested(const std::string& program_name, const std::string& source);

// Always writes the source: to SPARSEJIT_DUMP_SOURCE if set, else to the system temp dir.
// Used on compile failure so the message can name a file to open. Returns the path, or ""
// when even that failed.
std::string dump_failed_source(const std::string& program_name, const std::string& source);

}  // namespace sparsejit::jit
