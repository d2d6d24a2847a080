// SHA-256 of a byte string, as 64 lowercase hex digits, computed by libcrypto (OpenSSL).
// The compile cache keys kernels by the digest of their rendered source, so the text form
// (lowercase, no separators) is part of the on-disk key and must not change.
#pragma once
#include <string>
#include <string_view>

namespace sparsejit {

std::string sha256_hex(std::string_view data);

}  // namespace sparsejit
