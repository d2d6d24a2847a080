// The device-wide exclusive scan SpGEMM turns its row counts into C's row offsets with (CUB,
// compiled by nvcc in spgemm_scan.cu; DESIGN.md allows CUB in nvcc translation units).
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace sparsejit::ops {

// Bytes of temporary storage exclusive_scan needs for `count` values (no device work).
std::size_t exclusive_scan_bytes(int64_t count);

// out[i] = in[0] + ... + in[i - 1] for i in [0, count) (out[0] = 0), enqueued on `stream` in
// the current context, with `temp` of at least exclusive_scan_bytes(count) bytes. in and out
// are int32 device arrays of `count` values that do not overlap; the sums must fit in int32.
void exclusive_scan(const int32_t* in, int32_t* out, int64_t count, void* temp, std::size_t temp_bytes, CUstream stream);

}  // namespace sparsejit::ops
