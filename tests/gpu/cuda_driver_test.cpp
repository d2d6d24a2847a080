// The driver-API layer on a real GPU: device attributes, memory round trips with poisoned
// outputs, streams and event timing, a cubin compiled here with NVRTC and launched, errors that
// name the failing call, and the per-handle cache of DeviceCsr. Skips where no GPU exists.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <optional>
#include <thread>
#include <vector>

#include "cuda/driver_api.hpp"
#include "cuda/memory.hpp"
#include "cuda/module.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/error.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
    seed_ = test::fresh_seed();
    rng_.seed(seed_);
    context_.emplace(0);
  }
  const Context& context() const { return *context_; }
  std::vector<float> random_floats(std::size_t n) {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    std::vector<float> out(n);
    for (float& x : out) x = value(rng_);
    return out;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::optional<Context> context_;
};

#define TRACE_SEED() SCOPED_TRACE("seed " + std::to_string(seed_) + " (SPARSEJIT_TEST_SEED reproduces it)")

const char* kAxpySource = R"(
extern "C" __global__ void axpy(int n, float a, const float* x, float* y) {
  extern __shared__ float scratch[];  // touched so a dynamic-shared launch is exercised
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0 && blockDim.x > 0) scratch[0] = a;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

void check_nvrtc(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS) FAIL() << call << " failed: " << nvrtcGetErrorString(result);
}

// Compiles `source` to a cubin for sm_<sm>.
std::string compile_cubin(const char* source, int sm) {
  nvrtcProgram program = nullptr;
  std::string cubin;
  [&] { check_nvrtc(nvrtcCreateProgram(&program, source, "axpy.cu", 0, nullptr, nullptr), "nvrtcCreateProgram"); }();
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(sm);
  const char* options[] = {arch.c_str(), "--fmad=true"};  // a*x+y is one fused multiply-add
  const nvrtcResult compiled = nvrtcCompileProgram(program, 2, options);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    ADD_FAILURE() << "nvrtcCompileProgram failed: " << log;
  } else {
    std::size_t size = 0;
    [&] { check_nvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize"); }();
    cubin.resize(size);
    [&] { check_nvrtc(nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN"); }();
  }
  nvrtcDestroyProgram(&program);
  return cubin;
}

TEST_F(Gpu, DeviceInfoIsSane) {
  const DeviceInfo& info = context().info();
  EXPECT_FALSE(info.name.empty());
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_GE(info.sm, 70);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GE(info.max_threads_per_block, 1024);
  EXPECT_GE(info.max_threads_per_sm, info.max_threads_per_block);
  EXPECT_GE(info.max_blocks_per_sm, 16);  // every GPU since sm_75
  EXPECT_GE(info.shared_mem_per_block, 48 * 1024);
  EXPECT_GE(info.shared_mem_per_block_optin, info.shared_mem_per_block);
  EXPECT_GE(info.shared_mem_per_sm, info.shared_mem_per_block_optin);
  EXPECT_GT(info.registers_per_sm, 0);
  EXPECT_GT(info.l2_bytes, 0);
  EXPECT_GT(info.total_mem, std::size_t(1) << 30);
  EXPECT_GE(info.driver_version, 12000);
  EXPECT_GT(context().free_bytes(), 0u);
  EXPECT_LE(context().free_bytes(), info.total_mem);
  const std::string text = to_string(info);
  EXPECT_NE(text.find(info.name), std::string::npos) << text;
  EXPECT_NE(text.find("sm_" + std::to_string(info.sm)), std::string::npos) << text;
  EXPECT_GE(device_count(), 1);
}

TEST_F(Gpu, BadOrdinalIsInvalidInput) {
  EXPECT_THROW(Context(-1), InvalidInputError);
  EXPECT_THROW(device_info(device_count()), InvalidInputError);
}

TEST_F(Gpu, ContextIsThePrimaryContextTheRuntimeUses) {
  ASSERT_EQ(cudaSetDevice(context().ordinal()), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // forces the runtime to initialize its context
  CUcontext current = nullptr;
  SPARSEJIT_CU(cuCtxGetCurrent, &current);
  EXPECT_EQ(current, context().handle());
  // A buffer we allocate is a device pointer of this device for the runtime too.
  DeviceBuffer buffer(context(), 256);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, buffer.as<void>()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, context().ordinal());
}

TEST_F(Gpu, MemoryRoundTripWithPoison) {
  TRACE_SEED();
  for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(1) << 20}) {
    const std::vector<float> host = random_floats(n);
    DeviceBuffer buffer(context(), n * sizeof(float));
    buffer.fill_bytes(0xFF);
    std::vector<uint8_t> poisoned(n * sizeof(float), 0);
    buffer.download(poisoned.data(), poisoned.size());
    for (uint8_t byte : poisoned) ASSERT_EQ(byte, 0xFF);
    buffer.upload(host);
    std::vector<float> back(n, std::nanf(""));
    buffer.download(back.data(), n * sizeof(float));
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n * sizeof(float)), 0);
    EXPECT_EQ(buffer.download_as<float>(n), host);
  }
}

TEST_F(Gpu, OffsetsAndBoundsAreChecked) {
  TRACE_SEED();
  const std::vector<float> host = random_floats(64);
  DeviceBuffer buffer(context(), 64 * sizeof(float));
  buffer.fill_bytes(0xFF);
  buffer.upload(host.data() + 8, 16 * sizeof(float), 8 * sizeof(float));
  std::vector<float> back(64);
  buffer.download(back.data(), back.size() * sizeof(float));
  for (int i = 0; i < 64; ++i) {
    if (i >= 8 && i < 24) EXPECT_EQ(back[i], host[i]) << i;
    else EXPECT_TRUE(std::isnan(back[i])) << i;  // untouched bytes keep the poison
  }
  EXPECT_THROW(buffer.upload(host.data(), 65 * sizeof(float)), InvalidInputError);
  EXPECT_THROW(buffer.download(back.data(), 4, 64 * sizeof(float) - 3), InvalidInputError);
  DeviceBuffer empty(context(), 0);
  EXPECT_EQ(empty.ptr(), 0u);
  EXPECT_NO_THROW(empty.upload(host.data(), 0));
}

TEST_F(Gpu, AsyncCopiesThroughPinnedMemoryOnAStream) {
  TRACE_SEED();
  const std::size_t n = 1 << 18;
  const std::vector<float> host = random_floats(n);
  Stream stream(context());
  EXPECT_TRUE(stream.owned());
  cuda::PinnedBuffer staging(context(), n * sizeof(float));
  std::memcpy(staging.data(), host.data(), n * sizeof(float));
  DeviceBuffer first(context(), n * sizeof(float));
  DeviceBuffer second(context(), n * sizeof(float));
  second.fill_bytes_async(0xFF, stream.handle());
  first.upload_async(staging.data(), n * sizeof(float), stream.handle());
  second.copy_from_async(first, n * sizeof(float), stream.handle());
  stream.synchronize();  // the upload has read the staging memory: poison it for the download
  std::memset(staging.data(), 0xFF, n * sizeof(float));
  second.download_async(staging.data(), n * sizeof(float), stream.handle());
  stream.synchronize();
  EXPECT_EQ(std::memcmp(staging.data(), host.data(), n * sizeof(float)), 0);
}

TEST_F(Gpu, BuffersMoveAndWorkFromAnotherThread) {
  TRACE_SEED();
  const std::vector<float> host = random_floats(4096);
  DeviceBuffer buffer(context(), host.size() * sizeof(float));
  std::string failure;
  std::thread worker([&] {
    try {
      buffer.upload(host);  // no context is current on this new thread: the buffer makes its own current
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  worker.join();
  ASSERT_EQ(failure, "");
  DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.ptr(), 0u);
  EXPECT_EQ(moved.download_as<float>(host.size()), host);
}

TEST_F(Gpu, DenseWithLeadingDimensionKeepsPadding) {
  TRACE_SEED();
  Dense<float> host(37, 5);
  host.data = random_floats(host.data.size());
  DeviceDense<float> device(context(), 37, 5, 8);
  EXPECT_EQ(device.ld(), 8);
  device.buffer().fill_bytes(0xFF);
  device.upload(host);
  const Dense<float> back = device.download();
  EXPECT_EQ(back.data, host.data);
  const std::vector<float> raw = device.buffer().download_as<float>(37 * 8);
  for (int r = 0; r < 37; ++r)
    for (int c = 0; c < 8; ++c) {
      if (c < 5) EXPECT_EQ(raw[r * 8 + c], host.at(r, c));
      else EXPECT_TRUE(std::isnan(raw[r * 8 + c])) << "padding written at " << r << "," << c;
    }
  EXPECT_THROW(DeviceDense<float>(context(), 4, 5, 3), InvalidInputError);
  EXPECT_THROW(device.upload(Dense<float>(5, 37)), InvalidInputError);
}

TEST_F(Gpu, CompiledKernelRunsAndIsTimed) {
  TRACE_SEED();
  const int sm = context().info().sm;
  const std::string cubin = compile_cubin(kAxpySource, sm);
  ASSERT_FALSE(cubin.empty());
  cuda::Module module(context(), cubin);
  EXPECT_GT(module.load_ms(), 0.0);
  const cuda::Kernel axpy = module.function("axpy");
  EXPECT_EQ(axpy.name(), "axpy");
  EXPECT_GT(axpy.attribute(CU_FUNC_ATTRIBUTE_NUM_REGS), 0);
  EXPECT_GT(axpy.max_active_blocks_per_sm(256, 0), 0);

  const int n = 3'000'001;  // not a multiple of the block size
  const int guard = 64;     // poisoned elements past n that the kernel must not write
  const std::vector<float> x = random_floats(n);
  std::vector<float> y = random_floats(n + guard);
  const float a = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng_);
  DeviceBuffer dx = DeviceBuffer::from_host(context(), x);
  DeviceBuffer dy(context(), (n + guard) * sizeof(float));
  dy.fill_bytes(0xFF);
  dy.upload(y.data(), n * sizeof(float));

  Stream stream(context());
  Event start(context()), end(context());
  int count = n;
  float alpha = a;
  CUdeviceptr px = dx.ptr(), py = dy.ptr();
  void* args[] = {&count, &alpha, &px, &py};
  const unsigned block = 256;
  start.record(stream);
  axpy.launch({(n + block - 1) / block, 1, 1}, {block, 1, 1}, sizeof(float), stream.handle(), args);  // scratch[0] needs one float
  end.record(stream);
  const float ms = elapsed_ms(start, end);
  EXPECT_GT(ms, 0.0f);

  const std::vector<float> out = dy.download_as<float>(n + guard);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], std::fma(a, x[i], y[i])) << "element " << i;  // contracted on the GPU
  for (int i = n; i < n + guard; ++i) ASSERT_TRUE(std::isnan(out[i])) << "guard element " << i << " was written";

  // More than 48 KiB of dynamic shared memory needs the opt-in; with it the launch succeeds.
  const int optin = context().info().shared_mem_per_block_optin;
  axpy.set_max_dynamic_shared(optin);
  EXPECT_NO_THROW(axpy.launch({1, 1, 1}, {block, 1, 1}, unsigned(optin), stream.handle(), args));
  stream.synchronize();
  try {
    axpy.launch({1, 1, 1}, {block, 1, 1}, unsigned(optin) + 1024, stream.handle(), args);
    FAIL() << "a launch over the shared-memory limit succeeded";
  } catch (const CudaError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cuLaunchKernel failed for kernel 'axpy'", 0), 0u) << e.what();
  }
}

bool has_driver_error_format(const std::string& message, const std::string& call) {
  // "<call> failed: CUDA_ERROR_<NAME> (<description>)"
  const std::string prefix = call + " failed: CUDA_ERROR_";
  return message.rfind(prefix, 0) == 0 && message.find(" (") != std::string::npos && message.back() == ')';
}

TEST_F(Gpu, InvalidImagesAndNamesAreCudaErrorsThatSayWhy) {
  try {
    cuda::Module module(context(), "this is not a cubin");
    FAIL() << "loading text as a module succeeded";
  } catch (const CudaError& e) {
    EXPECT_TRUE(has_driver_error_format(e.what(), "cuModuleLoadData")) << e.what();
  }
  std::string cubin = compile_cubin(kAxpySource, context().info().sm);
  ASSERT_GT(cubin.size(), 20u);
  ASSERT_EQ(cubin.compare(0, 4, "\x7f" "ELF"), 0);
  cubin[18] = 0x3e;  // e_machine: x86-64 instead of CUDA
  cubin[19] = 0;
  try {
    cuda::Module module(context(), cubin);
    FAIL() << "a cubin for another machine loaded";
  } catch (const CudaError& e) {
    EXPECT_TRUE(has_driver_error_format(e.what(), "cuModuleLoadData")) << e.what();
  }
  EXPECT_THROW(cuda::Module(context(), ""), InvalidInputError);
  cuda::Module module(context(), compile_cubin(kAxpySource, context().info().sm));
  try {
    module.function("no_such_kernel");
    FAIL() << "a missing function was found";
  } catch (const CudaError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cuModuleGetFunction failed for kernel 'no_such_kernel': CUDA_ERROR_", 0), 0u)
        << e.what();
  }
}

TEST_F(Gpu, WrappedStreamIsNotDestroyed) {
  CUstream raw = nullptr;
  SPARSEJIT_CU(cuStreamCreate, &raw, CU_STREAM_DEFAULT);
  { Stream wrapped = Stream::wrap(context(), raw); EXPECT_FALSE(wrapped.owned()); wrapped.synchronize(); }
  SPARSEJIT_CU(cuStreamSynchronize, raw);  // still valid after the wrapper died
  SPARSEJIT_CU(cuStreamDestroy_v2, raw);
}

TEST_F(Gpu, DeviceCsrUploadsAndCachesByKey) {
  TRACE_SEED();
  Csr<float> host;
  host.rows = 3;
  host.cols = 4;
  host.row_ptr = {0, 2, 2, 5};
  host.col_idx = {1, 3, 0, 2, 3};
  host.values = random_floats(5);
  DeviceCsr<float> matrix(context(), host);
  EXPECT_EQ(matrix.nnz(), 5);
  EXPECT_EQ(matrix.row_ptr().download_as<int32_t>(4), host.row_ptr);
  EXPECT_EQ(matrix.col_idx().download_as<int32_t>(5), host.col_idx);
  EXPECT_EQ(matrix.values().download_as<float>(5), host.values);
  EXPECT_EQ(matrix.host_pattern().nnz(), 5);

  EXPECT_EQ(matrix.find("features"), nullptr);
  int builds = 0;
  auto make = [&] { ++builds; return std::make_shared<int>(42); };
  EXPECT_EQ(*matrix.get_or_create<int>("features", make), 42);
  EXPECT_EQ(*matrix.get_or_create<int>("features", make), 42);
  EXPECT_EQ(builds, 1);

  const uint64_t version = matrix.values_version();
  const std::vector<float> fresh = random_floats(5);
  matrix.update_values(fresh);
  EXPECT_EQ(matrix.values_version(), version + 1);
  EXPECT_EQ(matrix.values().download_as<float>(5), fresh);
  EXPECT_NE(matrix.find("features"), nullptr);  // pattern-derived entries survive a values update
  EXPECT_THROW(matrix.update_values(std::vector<float>(4)), InvalidInputError);

  host.col_idx[0] = 4;  // out of range
  EXPECT_THROW(DeviceCsr<float>(context(), host), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
