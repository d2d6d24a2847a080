// What a stored cubin must look like before the cache hands it out: a disk blob can be cut
// short or overwritten (a full disk, a bad copy of a shared cache), and loading a damaged
// image fails far from here with a driver error that names nothing. The check is structural,
// on the ELF header, so it needs no GPU.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace sparsejit::cache {

// Why `cubin` is not a whole CUDA ELF image (empty, no ELF magic, not 64-bit, not for CUDA,
// or its section header table runs past the end), or nullopt when it passes.
std::optional<std::string> cubin_problem(const std::vector<char>& cubin);

}  // namespace sparsejit::cache
