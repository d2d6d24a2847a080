// Early launch (Options::early_launch: programmatic dependent launch on sm_90 and later): a
// kernel of ours may start while the kernel before it on the stream is still running, so each
// must wait for that kernel's writes before it reads its inputs. A producer kernel here lets
// its dependents start at once and writes its output only after ~50 µs of spinning; the call
// that follows it reads that output. First a control: a kernel that does not wait, launched
// early, does see the output unwritten (so the overlap is real on this GPU and the checks below
// can fail); then every SDDMM and SpMM variant, launched early after the producer, must match
// the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>

#include "cuda/module.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "support/gpu_suite.hpp"

namespace sparsejit {
namespace {

const char* kProducerSource = R"(
// Lets the next kernel on the stream start now, then copies `words` 32-bit words late.
extern "C" __global__ void late_copy(long long words, const unsigned* src, unsigned* dst, long long spin_cycles) {
  asm volatile("griddepcontrol.launch_dependents;");
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
// Copies at once, without waiting for the kernel before it.
extern "C" __global__ void copy_without_wait(long long words, const unsigned* src, unsigned* dst) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
)";

constexpr long long kSpinCycles = 100000;  // ~50 µs at H100/H200 clocks, far longer than any call below

class EarlyLaunchGpu : public test::GpuSuite {
 protected:
  void SetUp() override {
    test::GpuSuite::SetUp();
    if (IsSkipped()) return;
    if (rt().device().sm < 90) GTEST_SKIP() << "early launch needs sm_90 or later (this GPU is sm_" << rt().device().sm << ")";
    const jit::CompileResult compiled =
        jit::compile_to_cubin(kProducerSource, "early_launch_test.cu", rt().device().sm, jit::normalize_options({}));
    module_.emplace(rt().context(), std::string(compiled.cubin.begin(), compiled.cubin.end()));
    stream_.emplace(rt().context());
  }

  CUstream stream() const { return stream_->handle(); }

  // Enqueues: dst := src (same size), written only after the spin, dependents allowed to start.
  void late_copy(const DeviceBuffer& src, DeviceBuffer& dst) const {
    long long words = (long long)(src.bytes() / 4), spin = kSpinCycles;
    CUdeviceptr s = src.ptr(), d = dst.ptr();
    void* args[] = {&words, &s, &d, &spin};
    module_->function("late_copy").launch({8, 1, 1}, {256, 1, 1}, 0, stream(), args);
  }

  void copy_without_wait(const DeviceBuffer& src, DeviceBuffer& dst, bool early) const {
    long long words = (long long)(src.bytes() / 4);
    CUdeviceptr s = src.ptr(), d = dst.ptr();
    void* args[] = {&words, &s, &d};
    module_->function("copy_without_wait").launch({8, 1, 1}, {256, 1, 1}, 0, stream(), args, early);
  }

  Options on_stream(const std::string& variant) const {
    Options o;
    o.variant = variant;
    o.stream = stream();
    o.measure = false;  // one plan, no timing: the producer must be the kernel right before
    if (variant == "reindexed_tiled") o.reuse = Reuse::Many;
    return o;
  }

 private:
  std::optional<cuda::Module> module_;
  std::optional<Stream> stream_;
};

std::size_t poisoned_words(const std::vector<unsigned>& words) {
  return std::size_t(std::count_if(words.begin(), words.end(), test::is_poison<unsigned>));
}

TEST_F(EarlyLaunchGpu, AKernelThatDoesNotWaitSeesItsPredecessorUnfinished) {
  const std::vector<unsigned> values(1 << 16, 7u);
  const DeviceBuffer good = DeviceBuffer::from_host(rt().context(), values);
  DeviceBuffer target(rt().context(), good.bytes()), observed(rt().context(), good.bytes());
  // In stream order first: that run also loads both kernels (lazy loading may serialize a
  // kernel's first launch).
  for (bool early : {false, true}) {
    SCOPED_TRACE(early ? "launched early" : "launched in stream order");
    target.fill_bytes(0xFF);
    observed.fill_bytes(0);
    late_copy(good, target);
    copy_without_wait(target, observed, early);
    rt().context().synchronize();
    const std::size_t stale = poisoned_words(observed.download_as<unsigned>(values.size()));
    if (early) {
      EXPECT_GT(stale, 0u) << "the early kernel ran after its predecessor: these tests would prove nothing";
    } else {
      EXPECT_EQ(stale, 0u);
    }
  }
}

TEST_F(EarlyLaunchGpu, EverySddmmVariantWaitsForTheKernelThatWritesA) {
  for (const std::string variant :
       {"coo_flat", "row_gather", "panel_gather", "dense_tile", "dense_mma", "dense_wgmma", "tiled_shared", "reindexed_tiled",
        "cusparse", ""}) {
    if (variant == "dense_wgmma" && rt().context().info().sm != 90) continue;  // sm_90a only
    SCOPED_TRACE("variant " + (variant.empty() ? std::string("auto") : variant));
    test::SddmmCase c(rt(), "uniform:700:60", 64, next_seed());
    const DeviceBuffer good_a = DeviceBuffer::from_host(rt().context(), c.a.data);
    const Options options = on_stream(variant);
    rt().sddmm(c.ds, c.da, c.db, c.dp, options);  // plan, format and compile now, not between the two kernels
    rt().context().synchronize();
    c.da.buffer().fill_bytes(0xFF);
    c.dp.fill_bytes(0xFF);
    late_copy(good_a, c.da.buffer());
    rt().sddmm(c.ds, c.da, c.db, c.dp, options);
    rt().context().synchronize();
    EXPECT_LE(c.error(), test::gpu_tolerance<float>());
  }
}

TEST_F(EarlyLaunchGpu, EverySpmmVariantWaitsForTheKernelThatWritesB) {
  const Csr<double> pattern = generate::from_spec("rmat:2048:30000", 3);
  for (bool transpose : {false, true}) {
    for (const std::string variant : {"csr_rowwarp", "csr_vector", "csr_rowsplit", "csr_merge", "rs", "dense", "cusparse", ""}) {
      if (transpose && variant != "" && variant != "csr_merge" && variant != "cusparse") continue;
      SCOPED_TRACE("variant " + (variant.empty() ? std::string("auto") : variant) + (transpose ? " Aᵀ·B" : " A·B"));
      test::SpmmCase<float> c(rt(), pattern, 48, transpose, next_seed());
      Options options = on_stream(variant);
      options.transpose_a = transpose;
      rt().spmm(c.da, c.db, c.dc, options);
      rt().context().synchronize();
      const DeviceBuffer good_b =
          DeviceBuffer::from_host(rt().context(), c.db.buffer().download_as<unsigned>(c.db.buffer().bytes() / 4));
      c.db.buffer().fill_bytes(0xFF);
      c.dc.buffer().fill_bytes(0xFF);
      late_copy(good_b, c.db.buffer());
      rt().spmm(c.da, c.db, c.dc, options);
      rt().context().synchronize();
      EXPECT_LE(test::relative_error(test::as_double(c.dc.download().data), test::as_double(c.expected.data)),
                test::gpu_tolerance<float>());
    }
  }
}

}  // namespace
}  // namespace sparsejit
