// A few elements of a device array read back to the host at once: one upload of their places,
// one gather kernel, one download. For a builder that needs a handful of C's columns (the
// warps' slice boundaries) where downloading the whole array would cost a virtual machine
// about 1 ms a megabyte of new host memory.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "sparsejit/device.hpp"

namespace sparsejit::formats {

// values[at[i]] for every i, an int32 array on the device, after the work queued on `stream`
// (blocking). Every place must be inside the array (the caller's offsets; not checked here).
std::vector<int32_t> gather_int32(const Context& context, CUdeviceptr values, const std::vector<int32_t>& at, CUstream stream);

}  // namespace sparsejit::formats
