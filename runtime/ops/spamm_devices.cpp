#include "ops/spamm_devices.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "cuda/nccl.hpp"
#include "ops/plan_sources.hpp"
#include "plan/spamm_devices.hpp"
#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::ops {

namespace {

std::string listed(const std::vector<int>& devices) {
  std::string out;
  for (int d : devices) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

// The GPUs asked for, this runtime's first (rank 0).
std::vector<int> ranks_of(const std::vector<int>& asked, int own) {
  const int count = device_count();
  std::vector<int> devices;
  if (asked.size() == 1 && asked[0] == -1) {
    for (int d = 0; d < count; ++d) devices.push_back(d);
  } else {
    for (int d : asked) {
      if (d < 0 || d >= count)
        throw InvalidInputError("spamm: device " + std::to_string(d) + " is not a GPU of this host (it has " + std::to_string(count) +
                                "; -1 alone asks for every one)");
      if (std::find(devices.begin(), devices.end(), d) != devices.end())
        throw InvalidInputError("spamm: device " + std::to_string(d) + " is listed twice in devices {" + listed(asked) + "}");
      devices.push_back(d);
    }
  }
  const auto at = std::find(devices.begin(), devices.end(), own);
  if (at == devices.end())
    throw InvalidInputError("spamm: devices {" + listed(asked) + "} lack this runtime's GPU " + std::to_string(own) +
                            ", which holds A, B and C");
  std::rotate(devices.begin(), at, at + 1);
  return devices;
}

// What a GPU other than rank 0 keeps between calls: its runtime, its stream, and room for its
// copies of A's rows, of B and of its rows of C (the whole of each, so any block fits).
template <class In, class Out>
struct Peer {
  Peer(int device, const plan::SpammProblem& p)
      : runtime(std::make_shared<Runtime>(device)),
        stream(Stream::non_blocking(runtime->context())),
        a(runtime->context(), p.m, p.k, p.lda),
        b(runtime->context(), p.k, p.n, p.ldb),
        c(runtime->context(), p.m, p.n, p.ldc) {}
  std::shared_ptr<Runtime> runtime;
  Stream stream;
  DeviceDense<In> a, b;
  DeviceDense<Out> c;
};

template <class In, class Out>
std::shared_ptr<Peer<In, Out>> peer_for(detail::RuntimeState& rt, int device, const plan::SpammProblem& p) {
  const std::string key = "spamm-peer:" + std::to_string(device) + ":" + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" +
                          std::to_string(p.n) + ":" + std::to_string(p.lda) + "," + std::to_string(p.ldb) + "," +
                          std::to_string(p.ldc) + ":" + to_string(p.operands) + ":" + to_string(p.dtype);
  return std::static_pointer_cast<Peer<In, Out>>(rt.prepared(key, [&] { return std::make_shared<Peer<In, Out>>(device, p); }));
}

// What a set of GPUs keeps between calls: the NCCL communicators, a lock (one call at a time
// drives them: communicators are not for concurrent use), and rank 0's second stream, on which
// the other ranks' blocks of C arrive while rank 0 still multiplies its own on the caller's
// stream (which would hold them back until it finished). The second stream starts after the
// work the caller queued before the call, and the caller's stream waits for it at the end.
struct Spread {
  Spread(const std::vector<int>& devices, const Context& root)
      : group(devices), side(Stream::non_blocking(root)), start(root), done(root) {}
  cuda::NcclGroup group;
  std::mutex mutex;
  Stream side;
  Event start, done;
};

// rows rows of x from `first` on, as a matrix over x's own memory.
template <class T>
DeviceDense<T> rows_of(const Context& context, const DeviceDense<T>& x, int32_t first, int32_t rows) {
  const std::size_t offset = std::size_t(first) * std::size_t(x.ld()) * sizeof(T);
  const std::size_t bytes = (std::size_t(rows) - 1) * std::size_t(x.ld()) * sizeof(T) + std::size_t(x.cols()) * sizeof(T);
  return DeviceDense<T>(context, DeviceBuffer::borrow(context, x.buffer().ptr() + offset, bytes), rows, x.cols(), x.ld());
}

// Bytes from a row's start through the last element of `rows` rows of x.
template <class T>
std::size_t span(const DeviceDense<T>& x, int32_t rows) {
  return ((std::size_t(rows) - 1) * std::size_t(x.ld()) + std::size_t(x.cols())) * sizeof(T);
}

}  // namespace

template <class In, class Out>
SpammInfo spamm_on_devices(Runtime& self, detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b,
                           DeviceDense<Out>& c, const SpammOptions& options) {
  const std::vector<int> devices = ranks_of(options.devices, self.device().ordinal);
  if (c.rows() != a.rows() || c.cols() != b.cols())
    throw InvalidInputError("spamm: C is " + std::to_string(c.rows()) + "x" + std::to_string(c.cols()) + " but A·B is " +
                            std::to_string(a.rows()) + "x" + std::to_string(b.cols()));
  SpammOptions whole = options;
  whole.devices.clear();
  const SpammFront front = spamm_front(rt, a, b, c, whole);
  const plan::SpammProblem& p = front.problem;
  Decision d = plan::plan_spamm({front.tau.tau, front.tau.selection}, p, rt.target, whole, plan_sources(Op::SpAMM, rt.target));
  const bool vendor = variants::SpammRegistry::find(d.variant)->traits.vendor;

  // cuBLAS multiplies every product of its rows: even rows are even work then.
  const std::vector<int64_t> kept = vendor ? std::vector<int64_t>(std::size_t(p.tile_rows()), int64_t(p.tile_inner()) * p.tile_cols())
                                           : plan::kept_per_tile_row(front.a, front.b, front.tau.tau);
  const std::vector<plan::RowBlock> blocks = plan::split_rows(kept, int(devices.size()));
  const int ranks = int(devices.size());
  const auto first_row = [&](int r) { return std::min(blocks[std::size_t(r)].first * p.tile, p.m); };
  const auto rows = [&](int r) { return std::min(blocks[std::size_t(r)].end * p.tile, p.m) - first_row(r); };

  std::vector<std::shared_ptr<Peer<In, Out>>> peers(static_cast<std::size_t>(ranks));
  for (int r = 1; r < ranks; ++r) peers[std::size_t(r)] = peer_for<In, Out>(rt, devices[std::size_t(r)], p);
  const auto spread = std::static_pointer_cast<Spread>(
      rt.prepared("spamm-spread:" + listed(devices), [&] { return std::make_shared<Spread>(devices, rt.context); }));
  std::lock_guard<std::mutex> lock(spread->mutex);
  cuda::NcclGroup* group = &spread->group;
  const CUstream root = static_cast<CUstream>(options.stream);
  const auto stream_of = [&](int r) { return r == 0 ? root : peers[std::size_t(r)]->stream.handle(); };
  // B is A itself: the broadcast carries every rank's rows of A too.
  const bool same = a.buffer().ptr() == b.buffer().ptr() && a.rows() == b.rows() && a.cols() == b.cols() && a.ld() == b.ld();

  group->start();
  for (int r = 0; r < ranks; ++r) {
    void* into = reinterpret_cast<void*>(r == 0 ? b.buffer().ptr() : peers[std::size_t(r)]->b.buffer().ptr());
    group->broadcast(r, reinterpret_cast<const void*>(b.buffer().ptr()), into, span(b, b.rows()), 0, stream_of(r));
  }
  for (int r = 1; r < ranks && !same; ++r) {
    if (rows(r) == 0) continue;
    const DeviceDense<In> slice = rows_of(rt.context, a, first_row(r), rows(r));
    group->send(0, reinterpret_cast<const void*>(slice.buffer().ptr()), span(slice, rows(r)), r, root);
    group->receive(r, reinterpret_cast<void*>(peers[std::size_t(r)]->a.buffer().ptr()), span(slice, rows(r)), 0, stream_of(r));
  }
  group->end();
  spread->start.record(root);  // before rank 0's products: the gathers need not wait for them
  SPARSEJIT_CU(cuStreamWaitEvent, spread->side.handle(), spread->start.handle(), 0);

  SpammOptions each = whole;
  each.valid_ratio.reset();
  each.max_error.reset();
  each.tau = front.tau.tau;
  each.variant = d.variant;
  each.params = d.params;
  each.tile = p.tile;
  nlohmann::json shares = nlohmann::json::array();
  int64_t total = 0;
  for (const plan::RowBlock& block : blocks) total += block.kept;
  for (int r = 0; r < ranks; ++r) {
    const plan::RowBlock& block = blocks[std::size_t(r)];
    shares.push_back({{"device", devices[std::size_t(r)]},
                      {"tile_rows", {block.first, block.end}},
                      {"kept_products", block.kept},
                      {"share", total == 0 ? 0.0 : double(block.kept) / double(total)}});
    if (rows(r) == 0) continue;
    each.stream = stream_of(r);
    if (r == 0) {
      DeviceDense<Out> c_rows = rows_of(rt.context, c, first_row(r), rows(r));
      self.spamm(rows_of(rt.context, a, first_row(r), rows(r)), b, c_rows, each);
    } else {
      Peer<In, Out>& peer = *peers[std::size_t(r)];
      const Context& at = peer.runtime->context();
      DeviceDense<Out> c_rows = rows_of(at, peer.c, 0, rows(r));
      peer.runtime->spamm(same ? rows_of(at, peer.b, first_row(r), rows(r)) : rows_of(at, peer.a, 0, rows(r)), peer.b, c_rows, each);
    }
  }

  group->start();
  for (int r = 1; r < ranks; ++r) {
    if (rows(r) == 0) continue;
    const std::size_t bytes = span(c, rows(r));
    group->send(r, reinterpret_cast<const void*>(peers[std::size_t(r)]->c.buffer().ptr()), bytes, 0, stream_of(r));
    group->receive(0, reinterpret_cast<void*>(c.buffer().ptr() + std::size_t(first_row(r)) * std::size_t(c.ld()) * sizeof(Out)), bytes,
                   r, spread->side.handle());
  }
  group->end();
  rt.context.make_current();  // NCCL sets each rank's device current in turn
  spread->done.record(spread->side);
  SPARSEJIT_CU(cuStreamWaitEvent, root, spread->done.handle(), 0);

  d.features["devices"] = shares;
  d.features["imbalance"] = plan::imbalance(blocks);
  d.features["nccl"] = cuda::NcclGroup::version();
  SpammInfo info;
  info.decision = std::make_shared<const Decision>(std::move(d));
  info.tile = p.tile;
  info.tau = vendor ? 0.0 : front.tau.tau;
  info.tile_products = front.tau.selection.triples;
  info.valid_products = vendor ? info.tile_products : front.tau.selection.valid;
  info.valid_ratio = vendor ? (info.tile_products == 0 ? 0.0 : 1.0) : front.tau.selection.ratio;
  info.error_bound = vendor ? 0.0 : front.tau.selection.error_bound;
  info.search_iterations = options.valid_ratio || options.max_error ? front.tau.iterations : 0;
  info.search_ms = info.search_iterations > 0 ? front.search_ms : 0;
  return info;
}

#define SPARSEJIT_INSTANTIATE(In, Out)                                                                                        \
  template SpammInfo spamm_on_devices(Runtime&, detail::RuntimeState&, const DeviceDense<In>&, const DeviceDense<In>&, \
                                      DeviceDense<Out>&, const SpammOptions&);
SPARSEJIT_INSTANTIATE(float, float)
SPARSEJIT_INSTANTIATE(double, double)
SPARSEJIT_INSTANTIATE(half, float)
SPARSEJIT_INSTANTIATE(bfloat16, float)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
