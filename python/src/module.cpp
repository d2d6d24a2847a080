// sparsejit._sparsejit: the C++ half of the Python package. Device arrays arrive as raw
// pointers with their shapes, and streams as integers (python/sparsejit/_arrays.py reads them
// off PyTorch, CuPy or any DLPack array), so a call converts nothing here: it wraps the
// caller's memory in borrowed buffers and calls the runtime, whose checks and messages stay
// the only ones. Its errors become the package's exceptions (python/sparsejit/_errors.py).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"
#include "sparsejit/runtime.hpp"
#include "tensor_reader.hpp"
#include "variants/catalog.hpp"

namespace nb = nanobind;
using namespace sparsejit;

namespace {

// --- Errors ------------------------------------------------------------------------------

// Raises sparsejit.<name>(message), the class defined in Python so that it can also derive
// from the matching built-in (ValueError, OSError).
void raise_as(const char* name, const Error& error) {
  nb::object cls = nb::module_::import_("sparsejit._errors").attr(name);
  nb::object instance = cls(error.what());
  if (const auto* compile = dynamic_cast<const CompileError*>(&error)) {
    instance.attr("log") = compile->log();
    instance.attr("source") = compile->source();
  }
  PyErr_SetObject(cls.ptr(), instance.ptr());
}

void translate_error(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const Error& e) {
    switch (e.category()) {
      case ErrorCategory::InvalidInput: return raise_as("InvalidInputError", e);
      case ErrorCategory::Unsupported: return raise_as("UnsupportedError", e);
      case ErrorCategory::Cuda: return raise_as("CudaError", e);
      case ErrorCategory::Compile: return raise_as("CompileError", e);
      case ErrorCategory::Io: return raise_as("IoError", e);
    }
  }
}

// --- Options -----------------------------------------------------------------------------

Reuse parse_reuse(const std::string& text) {
  if (text.empty() || text == "once") return Reuse::Once;
  if (text == "many") return Reuse::Many;
  throw InvalidInputError("reuse '" + text + "': expected 'once' or 'many'");
}

// One call's options: `variant` is "" (auto) or "name[:key=value,...]" as SPARSEJIT_FORCE takes
// it after the op.
Options call_options(Op op, const std::string& variant, const std::string& reuse, bool transpose_a, uintptr_t stream) {
  Options options;
  options.transpose_a = transpose_a;
  // Calls from Python on small matrices cost the host more than the device: launched as one
  // graph replay, a plan's kernels cost it about half (Options::replay_launches).
  options.replay_launches = true;
  options.reuse = parse_reuse(reuse);
  options.stream = reinterpret_cast<void*>(stream);
  if (!variant.empty()) {
    const ForcedChoice choice = parse_variant_choice(op, variant, "variant '" + variant + "'");
    options.variant = choice.variant;
    options.params = choice.params;
  }
  return options;
}

// The value types the products run in, by NumPy's names (what PyTorch and CuPy dtypes print).
DType value_type(const std::string& name) {
  if (name == "float32") return DType::F32;
  if (name == "float64") return DType::F64;
  throw InvalidInputError("dtype " + name + " is not supported: sparsejit multiplies float32 or float64 values");
}

// --- Operands ----------------------------------------------------------------------------

template <class Handle> struct value_of;
template <class T> struct value_of<DeviceCsr<T>> { using type = T; };
// The value type of a handle a visitor was given (as decltype(h)).
template <class Handle> using value_t = typename value_of<std::decay_t<Handle>>::type;

// The settings of a product that stay the same from call to call (op, transpose, variant,
// reuse), parsed once: a Matrix keeps one per combination it is called with, so a call
// converts no strings.
struct CallConfig {
  Op op;
  Options options;
};

CallConfig call_config(const std::string& op_name, const std::string& variant, const std::string& reuse, bool transpose_a) {
  const Op op = parse_op(op_name);
  if (op != Op::SpMM && op != Op::SDDMM) throw InvalidInputError("a call config is spmm's or sddmm's, not " + op_name + "'s");
  return {op, call_options(op, variant, reuse, transpose_a, 0)};
}

// The config's options on `stream` (the caller's current stream, read per call); a config of
// the other product is the package's own mistake, refused before anything runs.
Options on_stream(const CallConfig& config, Op op, uintptr_t stream) {
  if (config.op != op) throw InvalidInputError(std::string("a call config of ") + to_string(config.op) + " given to " + to_string(op));
  Options options = config.options;
  options.stream = reinterpret_cast<void*>(stream);
  return options;
}

// What a product reports to Python: whether the plan was reused, and its Decision (as JSON
// text, made only when asked for).
struct Call {
  CallInfo info;
  std::string decision_json() const { return to_json(*info.decision).dump(); }
};

// A CSR matrix over the caller's device arrays (borrowed), of either value type, with the
// runtime its products run on and what the last of them reported (kept here, read only when
// Python asks: a call returns nothing, so it makes no Python object).
class CsrHandle {
 public:
  CsrHandle(Runtime& rt, const std::string& dtype, int32_t rows, int32_t cols, uintptr_t row_ptr, uintptr_t col_idx,
      uintptr_t values, int64_t nnz, uintptr_t stream)
      : rt_(&rt), handle_(make(rt.context(), value_type(dtype), rows, cols, row_ptr, col_idx, values, nnz, stream)) {}

  Runtime& runtime() const { return *rt_; }
  // Set and read with the GIL held, so Python threads sharing a Matrix see whole records.
  const std::optional<Call>& last_call() const { return last_; }
  void set_last_call(CallInfo info) { last_ = Call{std::move(info)}; }

  template <class F>
  decltype(auto) visit(F&& f) { return std::visit(std::forward<F>(f), handle_); }
  int32_t rows() { return visit([](auto& h) { return h.rows(); }); }
  int32_t cols() { return visit([](auto& h) { return h.cols(); }); }
  int64_t nnz() { return visit([](auto& h) { return h.nnz(); }); }
  std::string dtype() { return std::holds_alternative<DeviceCsr<float>>(handle_) ? "float32" : "float64"; }
  void use_values(uintptr_t values) {
    visit([&](auto& h) {
      using T = value_t<decltype(h)>;
      h.use_values(DeviceBuffer::borrow(h.context(), values, std::size_t(h.nnz()) * sizeof(T)));
    });
  }
  PatternView host_pattern() { return visit([](auto& h) { return h.host_pattern(); }); }
  // The reader of the PyTorch operands of this matrix's dtype and device (the products' fast
  // path); none for other libraries.
  void read_tensors(nb::object dtype, int device, nb::object current_stream) {
    reader_.emplace(std::move(dtype), device, std::move(current_stream));
  }
  const python::TensorReader* tensor_reader() const { return reader_ ? &*reader_ : nullptr; }
  template <class T>
  DeviceCsr<T>* get_if() { return std::get_if<DeviceCsr<T>>(&handle_); }

  // The Matrix's state that every product reads, kept here so that a call reads it without
  // running Python code (all of it read and written with the GIL held). Its values array is the
  // Matrix's (passed to each call, never held here: a Python reference that the garbage
  // collector cannot see would keep cycles through it alive).
  // PyTorch's count of in-place writes to `values` (the array the handle's address is of) when
  // the handle last took them into account.
  void note_values(nb::handle values) { values_writes_seen_ = python::write_count(values); }
  // The values were rewritten in place: what the runtime derived from them is rebuilt.
  void values_changed(nb::handle values) {
    visit([](auto& h) { h.values_changed(); });
    note_values(values);
  }
  // The reuse of the products called without one ("once" or "many"; checked when a config
  // is made). The configs made for the old default go.
  const std::string& default_reuse() const { return default_reuse_; }
  void set_default_reuse(std::string reuse) {
    default_reuse_ = std::move(reuse);
    configs_.clear();
  }
  // Before a product: tells the runtime of the in-place writes PyTorch counted since the last
  // one (CuPy's are told with values_changed), and gives the call's config, parsed once per
  // combination of arguments and kept (InvalidInputError for a variant or reuse it refuses).
  // Shared: the caller holds it through the Python code a call still runs (reading operands,
  // allocating C), which may change the default reuse and drop the kept configs.
  std::shared_ptr<const CallConfig> ready(nb::handle values, Op op, bool transpose_a, const std::optional<std::string>& variant,
                                          const std::optional<std::string>& reuse) {
    if (python::write_count(values) != values_writes_seen_) values_changed(values);
    for (const KeptConfig& kept : configs_)
      if (kept.op == op && kept.transpose_a == transpose_a && kept.variant == variant && kept.reuse == reuse) return kept.config;
    // As the package's arguments read: no reuse (or "") is the matrix's, no variant is auto.
    const std::string& reuse_text = reuse && !reuse->empty() ? *reuse : default_reuse_;
    auto made = std::make_shared<const CallConfig>(call_config(to_string(op), variant.value_or(""), reuse_text, transpose_a));
    configs_.push_back(KeptConfig{op, transpose_a, variant, reuse, made});
    return made;
  }

 private:
  using Handle = std::variant<DeviceCsr<float>, DeviceCsr<double>>;
  template <class T>
  static Handle borrowed(const Context& ctx, int32_t rows, int32_t cols, uintptr_t row_ptr, uintptr_t col_idx,
                         uintptr_t values, int64_t nnz, uintptr_t stream) {
    const std::size_t entries = std::size_t(nnz);
    return Handle(std::in_place_type<DeviceCsr<T>>, ctx, rows, cols,
                  DeviceBuffer::borrow(ctx, row_ptr, (std::size_t(rows) + 1) * sizeof(int32_t)),
                  DeviceBuffer::borrow(ctx, col_idx, entries * sizeof(int32_t)), DeviceBuffer::borrow(ctx, values, entries * sizeof(T)),
                  reinterpret_cast<CUstream>(stream));
  }
  static Handle make(const Context& ctx, DType dtype, int32_t rows, int32_t cols, uintptr_t row_ptr, uintptr_t col_idx,
                     uintptr_t values, int64_t nnz, uintptr_t stream) {
    if (rows < 0 || nnz < 0)
      throw InvalidInputError("CSR matrix with " + std::to_string(rows) + " rows and " + std::to_string(nnz) + " entries");
    return dtype == DType::F32 ? borrowed<float>(ctx, rows, cols, row_ptr, col_idx, values, nnz, stream)
                               : borrowed<double>(ctx, rows, cols, row_ptr, col_idx, values, nnz, stream);
  }
  // A config with the arguments it was made for (a Matrix meets a handful of combinations).
  struct KeptConfig {
    Op op;
    bool transpose_a;
    std::optional<std::string> variant, reuse;
    std::shared_ptr<const CallConfig> config;
  };
  Runtime* rt_;  // the Python binding keeps the runtime alive as long as the handle
  Handle handle_;
  std::optional<Call> last_;
  std::optional<python::TensorReader> reader_;
  std::optional<int64_t> values_writes_seen_;
  std::string default_reuse_ = "many";
  std::vector<KeptConfig> configs_;
};

// A row-major dense operand over the caller's array: rows×cols, leading dimension ld.
template <class T>
DeviceDense<T> dense_view(const Context& ctx, uintptr_t data, int32_t rows, int32_t cols, int64_t ld) {
  const std::size_t extent = rows <= 0 || cols <= 0 ? 0 : (std::size_t(rows) - 1) * std::size_t(ld) + std::size_t(cols);
  return DeviceDense<T>(ctx, DeviceBuffer::borrow(ctx, data, extent * sizeof(T)), rows, cols, ld);
}

// Runs product(runtime, handle of its value type) with the GIL released (it may plan and
// compile), then keeps what it reported on the handle, the GIL held again.
template <class Product>
void run_product(CsrHandle& handle, Product&& product) {
  CallInfo info;
  {
    nb::gil_scoped_release unlocked;
    Runtime& rt = handle.runtime();
    info = handle.visit([&](auto& h) { return product(rt, h); });
  }
  handle.set_last_call(std::move(info));
}

// C = A·B (Aᵀ·B) on the caller's arrays (run_product: the GIL, what it reported).
void spmm(CsrHandle& a, const CallConfig& config, uintptr_t b, int32_t b_rows, int32_t b_cols, int64_t b_ld, uintptr_t c,
          int32_t c_rows, int32_t c_cols, int64_t c_ld, uintptr_t stream) {
  const Options options = on_stream(config, Op::SpMM, stream);
  run_product(a, [&](Runtime& rt, auto& h) {
    using T = value_t<decltype(h)>;
    const DeviceDense<T> db = dense_view<T>(rt.context(), b, b_rows, b_cols, b_ld);
    DeviceDense<T> dc = dense_view<T>(rt.context(), c, c_rows, c_cols, c_ld);
    return rt.spmm(h, db, dc, options);
  });
}

// P = S ∘ (A·Bᵀ) into the nnz values at `p`, as spmm.
void sddmm(CsrHandle& s, const CallConfig& config, uintptr_t a, int32_t a_rows, int32_t a_cols, int64_t a_ld, uintptr_t b,
           int32_t b_rows, int32_t b_cols, int64_t b_ld, uintptr_t p, uintptr_t stream) {
  const Options options = on_stream(config, Op::SDDMM, stream);
  run_product(s, [&](Runtime& rt, auto& h) {
    using T = value_t<decltype(h)>;
    const DeviceDense<T> da = dense_view<T>(rt.context(), a, a_rows, a_cols, a_ld);
    const DeviceDense<T> db = dense_view<T>(rt.context(), b, b_rows, b_cols, b_ld);
    DeviceBuffer dp = DeviceBuffer::borrow(rt.context(), p, std::size_t(h.nnz()) * sizeof(T));
    return rt.sddmm(h, da, db, dp, options);
  });
}

// The products on PyTorch tensors the handle's reader takes (nearly every call): b (and `out`
// when given) read here, C allocated as b.new_empty when `out` is None; returns C, or None
// when an operand is not such a tensor and the package's general path must read it.
nb::object spmm_plain(CsrHandle& a, const CallConfig& config, nb::handle b, nb::handle out) {
  const python::TensorReader* reader = a.tensor_reader();
  const std::optional<python::PlainTensor> pb = reader ? reader->matrix(b) : std::nullopt;
  if (!pb) return nb::none();
  const int64_t rows = config.options.transpose_a ? a.cols() : a.rows();
  nb::object c;
  python::PlainTensor pc{0, rows, pb->cols};
  if (out.is_none()) {
    std::tie(c, pc.ptr) = reader->new_empty(b, rows, pb->cols);
  } else {
    const std::optional<python::PlainTensor> given = reader->matrix(out);
    if (!given) return nb::none();
    c = nb::borrow(out), pc = *given;
  }
  spmm(a, config, pb->ptr, int32_t(pb->rows), int32_t(pb->cols), pb->cols, pc.ptr, int32_t(pc.rows), int32_t(pc.cols), pc.cols,
       reader->stream());
  return c;
}

// The values of S ∘ (A·Bᵀ) as spmm_plain: into a new vector of a's kind, or `out`, a vector of
// nnz entries (another length goes to the general path, which names it).
nb::object sddmm_plain(CsrHandle& s, const CallConfig& config, nb::handle a, nb::handle b, nb::handle out) {
  const python::TensorReader* reader = s.tensor_reader();
  const std::optional<python::PlainTensor> pa = reader ? reader->matrix(a) : std::nullopt;
  const std::optional<python::PlainTensor> pb = pa ? reader->matrix(b) : std::nullopt;
  if (!pb) return nb::none();
  nb::object p;
  uintptr_t values = 0;
  if (out.is_none()) {
    std::tie(p, values) = reader->new_empty(a, s.nnz());
  } else {
    const std::optional<python::PlainTensor> given = reader->vector(out);
    if (!given || given->rows != s.nnz()) return nb::none();
    p = nb::borrow(out), values = given->ptr;
  }
  sddmm(s, config, pa->ptr, int32_t(pa->rows), int32_t(pa->cols), pa->cols, pb->ptr, int32_t(pb->rows), int32_t(pb->cols),
        pb->cols, values, reader->stream());
  return p;
}

// sparsejit.spmm's first step: the product on the operands spmm_plain takes, with the config
// of these arguments (CsrHandle::ready; `values`: the matrix's values array). None, with nothing
// run, when B or the values require gradients (the package's autograd path decides) or an
// operand is not such a tensor.
nb::object spmm_call(CsrHandle& a, nb::handle values, nb::handle b, bool transpose_a, const std::optional<std::string>& variant,
                     const std::optional<std::string>& reuse, nb::handle out) {
  const python::TensorReader* reader = a.tensor_reader();
  if (reader == nullptr || reader->requires_grad(b) || reader->requires_grad(values)) return nb::none();
  const std::shared_ptr<const CallConfig> config = a.ready(values, Op::SpMM, transpose_a, variant, reuse);
  return spmm_plain(a, *config, b, out);
}

// sparsejit.sddmm's first step, as spmm_call (SDDMM takes no gradients).
nb::object sddmm_call(CsrHandle& s, nb::handle values, nb::handle a, nb::handle b, const std::optional<std::string>& variant,
                      const std::optional<std::string>& reuse, nb::handle out) {
  if (s.tensor_reader() == nullptr) return nb::none();
  const std::shared_ptr<const CallConfig> config = s.ready(values, Op::SDDMM, false, variant, reuse);
  return sddmm_plain(s, *config, a, b, out);
}

// A 1-D device array owned here (one of a product's CSR arrays), lent to PyTorch or CuPy
// through __cuda_array_interface__: the array they make keeps this object, and so `owner`
// (the product's handle), alive.
struct OwnedArray {
  std::shared_ptr<void> owner;
  CUdeviceptr ptr = 0;
  std::size_t length = 0;
  const char* typestr = "";  // "<i4", "<f4", "<f8"
  nb::dict interface() const {
    nb::dict d;
    d["shape"] = nb::make_tuple(length);
    d["typestr"] = typestr;
    d["data"] = nb::make_tuple(uintptr_t(ptr), false);
    d["version"] = 3;
    return d;
  }
};

// C = A·B (Aᵀ, Bᵀ with the flags), a new matrix: (rows, cols, indptr, indices, data), its arrays
// owned here and lent out.
nb::tuple spgemm(Runtime& rt, CsrHandle& a, CsrHandle& b, bool transpose_a, bool transpose_b, const std::string& variant,
                 uintptr_t stream, std::optional<int64_t> memory_limit) {
  Options options = call_options(Op::SpGEMM, variant, "", transpose_a, stream);
  options.transpose_b = transpose_b;
  options.memory_limit_bytes = memory_limit;
  return a.visit([&](auto& ha) {
    using T = value_t<decltype(ha)>;
    DeviceCsr<T>* hb = b.get_if<T>();
    if (hb == nullptr) throw InvalidInputError("spgemm: A holds " + a.dtype() + " values but B holds " + b.dtype());
    std::shared_ptr<DeviceCsr<T>> c;
    {
      nb::gil_scoped_release unlocked;  // the product may compile and synchronizes once
      c = std::make_shared<DeviceCsr<T>>(rt.spgemm(ha, *hb, options));
    }
    const char* values = sizeof(T) == 4 ? "<f4" : "<f8";
    return nb::make_tuple(c->rows(), c->cols(), OwnedArray{c, c->row_ptr().ptr(), std::size_t(c->rows()) + 1, "<i4"},
                          OwnedArray{c, c->col_idx().ptr(), std::size_t(c->nnz()), "<i4"},
                          OwnedArray{c, c->values().ptr(), std::size_t(c->nnz()), values});
  });
}

// SpAMM's options: at most one of tau, valid_ratio and max_error (the runtime checks), a
// precision by name, a tile size (0: the planner's), a variant as call_options takes it.
SpammOptions spamm_options(std::optional<double> tau, std::optional<double> valid_ratio, std::optional<double> max_error,
                           const std::string& precision, int32_t tile, const std::string& variant, uintptr_t stream) {
  SpammOptions o;
  o.tau = tau;
  o.valid_ratio = valid_ratio;
  o.max_error = max_error;
  o.precision = parse_spamm_precision(precision);
  o.tile = tile;
  o.stream = reinterpret_cast<void*>(stream);
  if (!variant.empty()) {
    const ForcedChoice choice = parse_variant_choice(Op::SpAMM, variant, "variant '" + variant + "'");
    o.variant = choice.variant;
    o.params = choice.params;
  }
  return o;
}

// C ≈ A·B on dense arrays; returns what the call reports (τ, the kept share, the bound, the
// Decision) as JSON text.
std::string spamm(Runtime& rt, const std::string& dtype, uintptr_t a, int32_t a_rows, int32_t a_cols, int64_t a_ld, uintptr_t b,
                  int32_t b_rows, int32_t b_cols, int64_t b_ld, uintptr_t c, int32_t c_rows, int32_t c_cols, int64_t c_ld,
                  const SpammOptions& options) {
  const auto run = [&](auto zero) {
    using T = decltype(zero);
    const DeviceDense<T> da = dense_view<T>(rt.context(), a, a_rows, a_cols, a_ld);
    const DeviceDense<T> db = dense_view<T>(rt.context(), b, b_rows, b_cols, b_ld);
    DeviceDense<T> dc = dense_view<T>(rt.context(), c, c_rows, c_cols, c_ld);
    return rt.spamm(da, db, dc, options);
  };
  const SpammInfo info = value_type(dtype) == DType::F32 ? run(0.0f) : run(0.0);
  return nlohmann::json{{"tau", info.tau},
                        {"tile", info.tile},
                        {"valid_products", info.valid_products},
                        {"tile_products", info.tile_products},
                        {"valid_ratio", info.valid_ratio},
                        {"error_bound", info.error_bound},
                        {"search_iterations", info.search_iterations},
                        {"search_ms", info.search_ms},
                        {"decision", to_json(*info.decision)}}
      .dump();
}

// --- Other DLPack producers ------------------------------------------------------------------

// NumPy's name of a DLPack dtype ("float32", "int64", ...).
std::string dtype_name(nb::dlpack::dtype t) {
  const char* kinds[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string kind = t.code < 7 ? kinds[t.code] : "code" + std::to_string(t.code);
  return kind + std::to_string(t.bits) + (t.lanes > 1 ? "x" + std::to_string(t.lanes) : "");
}

// (pointer, shape, strides in elements, dtype) of a DLPack capsule, which the caller made
// (__dlpack__) and keeps the array of alive for the call.
nb::tuple dlpack_array(const nb::ndarray<>& array) {
  nb::list shape, strides;
  for (std::size_t d = 0; d < array.ndim(); ++d) {
    shape.append(array.shape(d));
    strides.append(array.stride(d));
  }
  return nb::make_tuple(uintptr_t(array.data()), nb::tuple(shape), nb::tuple(strides), dtype_name(array.dtype()));
}

// --- Host patterns: explain and load -------------------------------------------------------

using HostIndices = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// The pattern of host arrays, checked as a host Csr is (the arrays' lengths first).
PatternView host_pattern(int32_t rows, int32_t cols, const HostIndices& row_ptr, const HostIndices& col_idx) {
  if (rows < 0 || row_ptr.shape(0) != std::size_t(rows) + 1)
    throw InvalidInputError("indptr has " + std::to_string(row_ptr.shape(0)) + " entries, a matrix of " + std::to_string(rows) +
                            " rows needs rows + 1");
  const PatternView pattern{rows, cols, row_ptr.data(), col_idx.data()};
  if (rows > 0 && int64_t(col_idx.shape(0)) != pattern.nnz())
    throw InvalidInputError("indptr ends at " + std::to_string(pattern.nnz()) + " but indices has " +
                            std::to_string(col_idx.shape(0)) + " entries");
  validate(pattern, /*require_sorted=*/false);
  return pattern;
}

std::string explain(const std::string& op_name, const PatternView& a, int32_t k, const std::string& dtype, bool transpose_a,
                    const std::string& variant, const std::string& reuse, int device, std::optional<int64_t> memory_limit) {
  const Op op = parse_op(op_name);
  if (transpose_a && op != Op::SpMM)
    throw InvalidInputError(std::string("transpose_a (C = Aᵀ·B) applies to spmm only, not ") + to_string(op));
  if (memory_limit && op != Op::SpGEMM)
    throw InvalidInputError(std::string("memory_limit applies to spgemm only, not ") + to_string(op));
  if (op == Op::SpAMM) throw InvalidInputError("explain takes a sparse pattern; spamm's operands are dense");
  Options options = call_options(op, variant, reuse, transpose_a, 0);
  options.memory_limit_bytes = memory_limit;
  const DType type = value_type(dtype);
  if (op == Op::SpGEMM && a.rows != a.cols)
    throw InvalidInputError("spgemm explains C = A·A, so A must be square; it is " + std::to_string(a.rows) + "x" +
                            std::to_string(a.cols));
  const Decision d = op == Op::SpMM    ? explain_spmm(a, k, type, options, device)
                     : op == Op::SDDMM ? explain_sddmm(a, k, type, options, device)
                                       : explain_spgemm(a, a, type, options, device);
  return to_json(d).dump();
}

// A NumPy array that takes `values` (freed with the array).
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

// A matrix file (.mtx, .smtx, plain or gzip; pattern files get seeded random values) or a
// generator spec "gen:NAME:..." as the CLI reads them: (rows, cols, indptr, indices, values).
nb::tuple load(const std::string& source, uint64_t seed) {
  const std::string prefix = "gen:";
  sparsejit::Csr<double> m;
  if (source.rfind(prefix, 0) == 0) {
    m = generate::from_spec(source.substr(prefix.size()), seed);
  } else {
    io::ReadOptions options;
    options.pattern_values = io::PatternValues::Random;
    options.seed = seed;
    m = io::read_csr<double>(source, options);
  }
  return nb::make_tuple(m.rows, m.cols, to_numpy(std::move(m.row_ptr)), to_numpy(std::move(m.col_idx)),
                        to_numpy(std::move(m.values)));
}

std::vector<std::pair<std::string, std::string>> variant_list(const std::string& op) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const variants::VariantInfo& v : variants::catalog(parse_op(op))) out.emplace_back(v.name, v.summary);
  return out;
}

}  // namespace

NB_MODULE(_sparsejit, m) {
  nb::register_exception_translator(translate_error);
  m.attr("__version__") = SPARSEJIT_VERSION;

  m.def("driver_available", &driver_available);
  m.def("driver_unavailable_reason", [] { return driver_unavailable_reason(); });
  m.def("device_count", &device_count);

  nb::class_<Runtime>(m, "Runtime")
      .def(nb::init<int>(), nb::arg("device") = 0)
      .def_prop_ro("device_name", [](const Runtime& rt) { return rt.device().name; });

  nb::class_<CsrHandle>(m, "Csr")
      // A handle's plans hold the runtime's loaded kernels: the runtime stays alive as long.
      .def(nb::init<Runtime&, const std::string&, int32_t, int32_t, uintptr_t, uintptr_t, uintptr_t, int64_t, uintptr_t>(),
           nb::keep_alive<1, 2>(), nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("rows", &CsrHandle::rows)
      .def_prop_ro("cols", &CsrHandle::cols)
      .def_prop_ro("nnz", &CsrHandle::nnz)
      .def_prop_ro("dtype", &CsrHandle::dtype)
      .def("values_changed", &CsrHandle::values_changed, nb::arg("values"))
      .def("use_values", &CsrHandle::use_values)
      // A copy: a later product does not change a record Python already holds.
      .def_prop_ro("last_call", [](const CsrHandle& h) { return h.last_call(); })
      // The products, as methods: the handle carries the runtime, the config the settings.
      .def("spmm", &spmm)
      .def("sddmm", &sddmm)
      .def("read_tensors", &CsrHandle::read_tensors)
      .def("spmm_plain", &spmm_plain, nb::arg("config"), nb::arg("b"), nb::arg("out").none())
      .def("sddmm_plain", &sddmm_plain, nb::arg("config"), nb::arg("a"), nb::arg("b"), nb::arg("out").none())
      .def("spmm_call", &spmm_call, nb::arg("values"), nb::arg("b"), nb::arg("transpose_a"), nb::arg("variant").none(),
           nb::arg("reuse").none(), nb::arg("out").none())
      .def("sddmm_call", &sddmm_call, nb::arg("values"), nb::arg("a"), nb::arg("b"), nb::arg("variant").none(),
           nb::arg("reuse").none(), nb::arg("out").none())
      .def("note_values", &CsrHandle::note_values, nb::arg("values"))
      .def_prop_rw("default_reuse", &CsrHandle::default_reuse, &CsrHandle::set_default_reuse)
      // A copy: the config outlives a change of the default reuse, which drops the kept ones.
      .def(
          "ready",
          [](CsrHandle& h, nb::handle values, const std::string& op, bool transpose_a, const std::optional<std::string>& variant,
             const std::optional<std::string>& reuse) { return *h.ready(values, parse_op(op), transpose_a, variant, reuse); },
          nb::arg("values"), nb::arg("op"), nb::arg("transpose_a"), nb::arg("variant").none(), nb::arg("reuse").none());

  nb::class_<Call>(m, "Call")
      .def_prop_ro("plan_reused", [](const Call& c) { return c.info.plan_reused; })
      .def_prop_ro("launched_as_graph", [](const Call& c) { return c.info.launched_as_graph; })
      .def("decision_json", &Call::decision_json);

  nb::class_<CallConfig>(m, "CallConfig");
  m.def("call_config", &call_config, nb::arg("op"), nb::arg("variant"), nb::arg("reuse"), nb::arg("transpose_a"));
  nb::class_<OwnedArray>(m, "OwnedArray").def_prop_ro("__cuda_array_interface__", &OwnedArray::interface);
  m.def("spgemm", &spgemm);
  nb::class_<SpammOptions>(m, "SpammOptions");
  m.def("spamm_options", &spamm_options);
  m.def("spamm", &spamm, nb::call_guard<nb::gil_scoped_release>());

  m.def(
      "explain_arrays",
      [](const std::string& op, int32_t rows, int32_t cols, const HostIndices& row_ptr, const HostIndices& col_idx, int32_t k,
         const std::string& dtype, bool transpose_a, const std::string& variant, const std::string& reuse, int device,
         std::optional<int64_t> memory_limit) {
        return explain(op, host_pattern(rows, cols, row_ptr, col_idx), k, dtype, transpose_a, variant, reuse, device, memory_limit);
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "explain_matrix",
      [](const std::string& op, CsrHandle& a, int32_t k, const std::string& dtype, bool transpose_a, const std::string& variant,
         const std::string& reuse, int device, std::optional<int64_t> memory_limit) {
        return explain(op, a.host_pattern(), k, dtype, transpose_a, variant, reuse, device, memory_limit);
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("dlpack_array", &dlpack_array);
  m.def("load", &load);
  m.def("variants", &variant_list);
}
