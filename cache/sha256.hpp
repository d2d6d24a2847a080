// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits. Used to key compiled
// kernels by their rendered source.
#pragma once
#include <string>
#include <string_view>

namespace sparsejit::cache {

std::string sha256_hex(std::string_view data);

}  // namespace sparsejit::cache
