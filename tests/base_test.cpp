// base/: the pieces below both the runtime and the cache. SHA-256 digests are part of every
// compile cache key, so they are checked against published test vectors (FIPS 180-4 examples
// and the NIST long-message vector): a kernel cached before the switch to libcrypto keeps its key.
#include <gtest/gtest.h>

#include <string>

#include "base/nvrtc_target.hpp"
#include "base/sha256.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

TEST(Sha256, EmptyInput) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, OneBlock) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits after the padding bit, so padding takes a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, LongerThanOneBlock) {
  // 112 bytes: one full block and a partial one.
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  // Exactly one block of input, then a block of padding only.
  EXPECT_EQ(sha256_hex(std::string(64, 'x')), "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, BytesPastANulCount) {
  const std::string with_nul("a\0b", 3);
  EXPECT_EQ(sha256_hex(with_nul).size(), 64u);
  EXPECT_NE(sha256_hex(with_nul), sha256_hex("a"));
}

TEST(NvrtcTarget, ArchNames) {
  EXPECT_EQ(arch_name(80), "sm_80");
  EXPECT_EQ(arch_name(90, true), "sm_90a");
  EXPECT_THROW(arch_name(49), InvalidInputError);
  EXPECT_THROW(arch_name(1000), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
