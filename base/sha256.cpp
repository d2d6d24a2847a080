#include "base/sha256.hpp"

#include <openssl/evp.h>

#include "sparsejit/error.hpp"

namespace sparsejit {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  // EVP_Digest only fails when libcrypto cannot allocate or its SHA-256 provider is missing
  // (a broken installation); a key built from a partial digest would be worse than stopping.
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1 || length != 32) {
    throw UnsupportedError("libcrypto could not compute a SHA-256 digest (is its default provider installed?)");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace sparsejit
