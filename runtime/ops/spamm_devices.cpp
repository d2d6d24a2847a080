#include "ops/spamm_devices.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "cuda/memory.hpp"
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
                            ", which holds the operands (rank 0)");
  std::rotate(devices.begin(), at, at + 1);
  return devices;
}

// A GPU other than rank 0: a runtime state of its own (kernels, scratch, cuBLAS) and a stream.
struct PeerGpu {
  explicit PeerGpu(int device) : state(std::make_shared<detail::RuntimeState>(device)), stream(Stream::non_blocking(state->context)) {}
  std::shared_ptr<detail::RuntimeState> state;
  Stream stream;
};

// Events on one GPU's stream: a call's start there, its operands' arrival, its products' end;
// and `joined`, which the caller's stream waits for at the end of a call.
struct RankClock {
  explicit RankClock(const Context& context) : start(context), arrived(context), finished(context), joined(context) {}
  Event start, arrived, finished, joined;
};

// What a set of GPUs keeps between calls: the NCCL communicators, a lock (one call at a time
// drives them: communicators are not for concurrent use), the other GPUs' states and streams,
// rank 0's side stream for its transfers, each GPU's clock, and per problem the paces its calls
// measured (a call's read once its work is done, at the next call).
struct Spread {
  Spread(const std::vector<int>& devices_, const Context& root)
      : devices(devices_),
        root_context(root),
        group(devices_),
        side(Stream::non_blocking(root)),
        begun(root),
        transferred(root) {
    called.emplace_back(root);
    called.emplace_back(root);
    peers.resize(devices.size());
    clocks.emplace_back(root);
    for (std::size_t r = 1; r < devices.size(); ++r) {
      peers[r] = std::make_unique<PeerGpu>(devices[r]);
      clocks.emplace_back(peers[r]->state->context);
    }
    root.make_current();
  }
  int ranks() const { return int(devices.size()); }
  detail::RuntimeState& state(int r, detail::RuntimeState& rt) const { return r == 0 ? rt : *peers[std::size_t(r)]->state; }
  CUstream stream(int r, CUstream root) const { return r == 0 ? root : peers[std::size_t(r)]->stream.handle(); }

  // The other GPUs' streams and the side stream follow what the caller queued on `root`.
  void follow(CUstream root) {
    begun.record(root);
    SPARSEJIT_CU(cuStreamWaitEvent, side.handle(), begun.handle(), 0);
    for (int r = 1; r < ranks(); ++r) SPARSEJIT_CU(cuStreamWaitEvent, stream(r, root), begun.handle(), 0);
  }
  // `root` waits for every other GPU's stream (cross-device waits: no host synchronization).
  // Rank 0's context is current for the waits: a null `root` is its legacy stream.
  void join(CUstream root) {
    for (int r = 1; r < ranks(); ++r) clocks[std::size_t(r)].joined.record(stream(r, root));
    root_context.make_current();
    for (int r = 1; r < ranks(); ++r) SPARSEJIT_CU(cuStreamWaitEvent, root, clocks[std::size_t(r)].joined.handle(), 0);
  }
  // The last clocked call's paces, once every GPU's products are done (else left for later).
  void read_clocks() {
    if (clocked_problem.empty()) return;
    for (const RankClock& clock : clocks)
      if (!clock.finished.done()) return;
    Measured& m = measured[clocked_problem];
    std::vector<plan::BlockTiming> call(clocks.size());
    for (std::size_t r = 0; r < clocks.size(); ++r) {
      call[r].rows = clocked_blocks[r].end - clocked_blocks[r].first;
      call[r].kept = clocked_blocks[r].kept;
      call[r].start_ms = std::max(0.0, double(elapsed_ms(clocks[r].start, clocks[r].arrived)));
      call[r].products_ms = std::max(0.0, double(elapsed_ms(clocks[r].arrived, clocks[r].finished)));
    }
    m.paces.add(call);
    m.front_ms = elapsed_ms(called[std::size_t(clocked_parity)], clocks[0].start);
    m.blocks = clocked_blocks;
    clocked_problem.clear();
  }
  // Marks the start of a call on rank 0's stream, before its front (in the other of two
  // events: the last clocked call's mark is read after this call's front).
  void call_starts(CUstream root) {
    parity ^= 1;
    called[std::size_t(parity)].record(root);
  }
  // A call's GPUs are clocked: its problem and blocks, for the paces read at a later call.
  void clocked(const std::string& problem, const std::vector<plan::RowBlock>& blocks) {
    clocked_problem = problem;
    clocked_blocks = blocks;
    clocked_parity = parity;
  }

  const std::vector<int> devices;
  const Context root_context;
  cuda::NcclGroup group;
  std::mutex mutex;
  std::vector<std::unique_ptr<PeerGpu>> peers;  // [0] empty: rank 0 is the runtime itself
  Stream side;
  Event begun, transferred;  // on rank 0
  std::vector<Event> called;
  std::vector<RankClock> clocks;
  // What the calls of a problem measured: the fitted cost and the GPUs' starts, and of the last
  // call rank 0's time from its start to its products' (norms, τ, the host's count and plan)
  // and the blocks it ran.
  struct Measured {
    plan::Paces paces;
    double front_ms = 0;
    std::vector<plan::RowBlock> blocks;
  };
  std::map<std::string, Measured> measured;

 private:
  std::string clocked_problem;  // the last call whose clocks are unread, its blocks and mark
  std::vector<plan::RowBlock> clocked_blocks;
  int parity = 0, clocked_parity = 0;
};

std::shared_ptr<Spread> spread_for(detail::RuntimeState& rt, const std::vector<int>& devices) {
  return std::static_pointer_cast<Spread>(
      rt.prepared("spamm-spread:" + listed(devices), [&] { return std::make_shared<Spread>(devices, rt.context); }));
}

// `rows` rows of x from `first` on, as a matrix over x's own memory (on `context`, x's GPU).
template <class T>
DeviceDense<T> rows_of(const Context& context, const DeviceDense<T>& x, int32_t first, int32_t rows) {
  const std::size_t offset = std::size_t(first) * std::size_t(x.ld()) * sizeof(T);
  const std::size_t bytes = rows == 0 ? 0 : (std::size_t(rows) - 1) * std::size_t(x.ld()) * sizeof(T) + std::size_t(x.cols()) * sizeof(T);
  return DeviceDense<T>(context, DeviceBuffer::borrow(context, x.buffer().ptr() + offset, bytes), rows, x.cols(), x.ld());
}

// Bytes from a row's start through the last element of `rows` rows of x.
template <class T>
std::size_t span(const DeviceDense<T>& x, int32_t rows) {
  return rows == 0 ? 0 : ((std::size_t(rows) - 1) * std::size_t(x.ld()) + std::size_t(x.cols())) * sizeof(T);
}

template <class In>
bool same_matrix(const DeviceDense<In>& a, const DeviceDense<In>& b) {
  return a.buffer().ptr() == b.buffer().ptr() && a.rows() == b.rows() && a.cols() == b.cols() && a.ld() == b.ld();
}

// What a call settled before any GPU multiplies: τ, the plan, and each GPU's block.
struct Assignment {
  SpammFront front;
  Decision d;
  bool vendor = false;
  std::vector<plan::RowBlock> blocks;
  std::vector<double> shares;
  std::string problem_key;  // the paces' key
  nlohmann::json balance;
  nlohmann::json host_ms = nlohmann::json::object();  // the call's host time by step

  int32_t first_row(int r) const { return std::min(blocks[std::size_t(r)].first * front.problem.tile, front.problem.m); }
  int32_t rows(int r) const { return std::min(blocks[std::size_t(r)].end * front.problem.tile, front.problem.m) - first_row(r); }
};

// The options of the whole product (the spread over GPUs taken out).
SpammOptions whole_of(const SpammOptions& options) {
  SpammOptions whole = options;
  whole.devices.clear();
  return whole;
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

// Step 2, after the front (which took front_ms of host time): the plan, the kept products per
// tile row and the blocks.
Assignment assign(detail::RuntimeState& rt, Spread& spread, SpammFront front, double front_ms, const SpammOptions& options,
                  const std::string& operands) {
  const Clock::time_point start = Clock::now();
  const SpammOptions whole = whole_of(options);
  Assignment as;
  as.front = std::move(front);
  as.host_ms["front"] = front_ms;
  const plan::SpammProblem& p = as.front.problem;
  as.d = plan::plan_spamm({as.front.tau.tau, as.front.tau.selection}, p, rt.target, whole, plan_sources(Op::SpAMM, rt.target));
  as.vendor = variants::SpammRegistry::find(as.d.variant)->traits.vendor;
  // cuBLAS multiplies every product of its rows: even rows are even work then.
  const std::vector<int64_t> kept = as.vendor ? std::vector<int64_t>(std::size_t(p.tile_rows()), int64_t(p.tile_inner()) * p.tile_cols())
                                              : as.front.kept_per_row;
  as.problem_key = std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n) + ":" + to_string(p.operands) + ":" +
                   to_string(p.precision) + ":" + std::to_string(p.tile) + ":" + as.d.variant + ":" + operands;
  spread.read_clocks();
  const auto known = spread.measured.find(as.problem_key);
  const bool measured = known != spread.measured.end();
  plan::BlockCut cut = plan::cut_blocks(kept, spread.ranks(), measured ? &known->second.paces : nullptr,
                                        measured ? known->second.blocks : std::vector<plan::RowBlock>{});
  as.blocks = std::move(cut.blocks);
  as.shares = std::move(cut.shares);
  as.balance = {{"source", plan::to_string(cut.source)}};
  if (measured) {
    as.balance["predicted_ms"] = cut.predicted_ms;
    as.balance["previous_front_ms"] = known->second.front_ms;
    const plan::Paces& paces = known->second.paces;
    nlohmann::json starts = nlohmann::json::array();
    for (int r = 0; r < paces.ranks(); ++r) starts.push_back(paces.start_ms(r));
    as.balance["paces"] = {{"calls", paces.calls()},
                           {"start_ms", starts},
                           {"ms_per_tile_row", paces.ms_per_row()},
                           {"ms_per_kept", paces.ms_per_kept()}};
  }
  as.host_ms["plan"] = ms_since(start);
  return as;
}

// The call's report: τ and the selection of the whole product, each GPU's block in the Decision.
SpammInfo report(Assignment& as, const std::vector<int>& devices, const SpammOptions& options, const std::string& operands,
                 const std::string& c_kept) {
  nlohmann::json blocks = nlohmann::json::array();
  int64_t total = 0;
  for (const plan::RowBlock& block : as.blocks) total += block.kept;
  for (std::size_t r = 0; r < as.blocks.size(); ++r) {
    const plan::RowBlock& block = as.blocks[r];
    blocks.push_back({{"device", devices[r]},
                      {"tile_rows", {block.first, block.end}},
                      {"kept_products", block.kept},
                      {"share", total == 0 ? 0.0 : double(block.kept) / double(total)},
                      {"planned_share", as.shares[r]}});
  }
  Decision& d = as.d;
  d.features["devices"] = blocks;
  d.features["imbalance"] = plan::imbalance(as.blocks);
  d.features["balance"] = as.balance;
  d.features["host_ms"] = as.host_ms;
  d.features["operands"] = operands;
  d.features["c"] = c_kept;
  d.features["nccl"] = cuda::NcclGroup::version();
  const plan::TauSearch& tau = as.front.tau;
  SpammInfo info;
  info.decision = std::make_shared<const Decision>(std::move(d));
  info.tile = as.front.problem.tile;
  info.tau = as.vendor ? 0.0 : tau.tau;
  info.tile_products = tau.selection.triples;
  info.valid_products = as.vendor ? info.tile_products : tau.selection.valid;
  info.valid_ratio = as.vendor ? (info.tile_products == 0 ? 0.0 : 1.0) : tau.selection.ratio;
  info.error_bound = as.vendor ? 0.0 : tau.selection.error_bound;
  info.search_iterations = options.valid_ratio || options.max_error ? tau.iterations : 0;
  info.search_ms = info.search_iterations > 0 ? as.front.search_ms : 0;
  return info;
}

// The options each GPU's share runs with: the whole product's tile, on that GPU's stream.
SpammOptions share_options(const SpammOptions& options, const plan::SpammProblem& p, CUstream stream) {
  SpammOptions each = options;
  each.devices.clear();
  each.tile = p.tile;
  each.stream = stream;
  return each;
}

// Room on a GPU other than rank 0 for its copies of A's rows, of B and of its rows of C (the
// whole of each, so that any block fits), per problem.
template <class In, class Out>
struct HeldCopies {
  HeldCopies(const Context& context, const plan::SpammProblem& p)
      : a(context, p.m, p.k, p.lda), b(context, p.k, p.n, p.ldb), c(context, p.m, p.n, p.ldc) {}
  DeviceDense<In> a, b;
  DeviceDense<Out> c;
};

template <class In, class Out>
std::shared_ptr<HeldCopies<In, Out>> held_copies(detail::RuntimeState& rt, const Context& peer, const plan::SpammProblem& p) {
  const std::string key = "spamm-held:" + std::to_string(peer.info().ordinal) + ":" + std::to_string(p.m) + "x" + std::to_string(p.k) +
                          "x" + std::to_string(p.n) + ":" + std::to_string(p.lda) + "," + std::to_string(p.ldb) + "," +
                          std::to_string(p.ldc) + ":" + to_string(p.operands) + ":" + to_string(p.dtype);
  return std::static_pointer_cast<HeldCopies<In, Out>>(rt.prepared(key, [&] { return std::make_shared<HeldCopies<In, Out>>(peer, p); }));
}

// Step 1 with the operands on every GPU: GPU r computes the norms of the r-th slice of A's
// (and B's) tile rows into its own whole maps, every slice is broadcast from its GPU into the
// others' maps (the maps are kilobytes to megabytes: N = 32768 at tile 64 is 2 MiB each), and
// rank 0 searches τ over its now whole maps. The maps stay in `blocks` for the products.
template <class In>
SpammFront front_from_slices(detail::RuntimeState& rt, Spread& spread, const plan::SpammProblem& p, const SpreadDense<In>& a,
                             const SpreadDense<In>& b, const SpammOptions& options, std::vector<cuda::ScratchPool::Block>& blocks,
                             std::vector<SpammMaps>& maps) {
  const CUstream root = static_cast<CUstream>(options.stream);
  const bool same = same_matrix(a.parts[0], b.parts[0]);
  const std::size_t a_bytes = spamm_map_bytes(p, false), b_bytes = same ? 0 : spamm_map_bytes(p, true);
  const int ranks = spread.ranks();
  const auto slice = [&](int32_t rows, int r) { return int32_t(int64_t(rows) * r / ranks); };
  for (int r = 0; r < ranks; ++r) {
    detail::RuntimeState& state = spread.state(r, rt);
    const CUstream stream = spread.stream(r, root);
    state.context.make_current();
    blocks[std::size_t(r)] = state.scratch_pool().allocate(a_bytes + b_bytes, stream);
    maps[std::size_t(r)] = {blocks[std::size_t(r)].ptr(), same ? blocks[std::size_t(r)].ptr() : blocks[std::size_t(r)].ptr() + a_bytes};
    spamm_norm_rows(state, p, a.parts[std::size_t(r)], false, slice(p.tile_rows(), r), slice(p.tile_rows(), r + 1), maps[std::size_t(r)].a,
                    stream);
    if (!same)
      spamm_norm_rows(state, p, b.parts[std::size_t(r)], true, slice(p.tile_inner(), r), slice(p.tile_inner(), r + 1),
                      maps[std::size_t(r)].b, stream);
  }
  // One broadcast per slice and map, in the same order on every GPU.
  spread.group.start();
  for (int owner = 0; owner < ranks; ++owner)
    for (const bool of_b : {false, true}) {
      if (of_b && same) continue;
      const int32_t rows = of_b ? p.tile_inner() : p.tile_rows();
      const std::size_t row_bytes = std::size_t(of_b ? p.tile_cols() : p.tile_inner()) * sizeof(double);
      const std::size_t offset = std::size_t(slice(rows, owner)) * row_bytes;
      const std::size_t bytes = std::size_t(slice(rows, owner + 1) - slice(rows, owner)) * row_bytes;
      if (bytes == 0) continue;
      for (int r = 0; r < ranks; ++r) {
        void* at = reinterpret_cast<void*>((of_b ? maps[std::size_t(r)].b : maps[std::size_t(r)].a) + offset);
        spread.group.broadcast(r, at, at, bytes, owner, spread.stream(r, root));
      }
    }
  spread.group.end();
  return spamm_front_on_maps(rt, p, maps[0], whole_of(options));
}

}  // namespace

template <class In, class Out>
SpammInfo spamm_on_devices(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, DeviceDense<Out>& c,
                           const SpammOptions& options) {
  const std::vector<int> devices = ranks_of(options.devices, rt.context.info().ordinal);
  if (c.rows() != a.rows() || c.cols() != b.cols())
    throw InvalidInputError("spamm: C is " + std::to_string(c.rows()) + "x" + std::to_string(c.cols()) + " but A·B is " +
                            std::to_string(a.rows()) + "x" + std::to_string(b.cols()));
  const std::shared_ptr<Spread> spread = spread_for(rt, devices);
  std::lock_guard<std::mutex> lock(spread->mutex);
  const CUstream root = static_cast<CUstream>(options.stream);
  const Clock::time_point start = Clock::now();
  spread->call_starts(root);
  SpammFront front = spamm_front<In, Out>(rt, a, b, c.ld(), whole_of(options));
  Assignment as = assign(rt, *spread, std::move(front), ms_since(start), options, "sent");
  const Clock::time_point enqueue = Clock::now();
  const plan::SpammProblem& p = as.front.problem;
  const int ranks = spread->ranks();
  std::vector<std::shared_ptr<HeldCopies<In, Out>>> copies(static_cast<std::size_t>(ranks));
  for (int r = 1; r < ranks; ++r) copies[std::size_t(r)] = held_copies<In, Out>(rt, spread->state(r, rt).context, p);
  // B is A itself: the broadcast carries every GPU's rows of A too.
  const bool same = same_matrix(a, b);

  spread->follow(root);
  for (int r = 0; r < ranks; ++r) spread->clocks[std::size_t(r)].start.record(spread->stream(r, root));
  cuda::NcclGroup& group = spread->group;
  group.start();
  for (int r = 0; r < ranks; ++r) {
    void* into = reinterpret_cast<void*>(r == 0 ? b.buffer().ptr() : copies[std::size_t(r)]->b.buffer().ptr());
    group.broadcast(r, reinterpret_cast<const void*>(b.buffer().ptr()), into, span(b, b.rows()), 0,
                    r == 0 ? spread->side.handle() : spread->stream(r, root));
  }
  for (int r = 1; r < ranks && !same; ++r) {
    if (as.rows(r) == 0) continue;
    const std::size_t bytes = span(a, as.rows(r));
    group.send(0, reinterpret_cast<const void*>(a.buffer().ptr() + std::size_t(as.first_row(r)) * std::size_t(a.ld()) * sizeof(In)), bytes,
               r, spread->side.handle());
    group.receive(r, reinterpret_cast<void*>(copies[std::size_t(r)]->a.buffer().ptr()), bytes, 0, spread->stream(r, root));
  }
  group.end();

  // Rank 0 holds its operands: its products start now, beside its transfers on the side stream.
  for (int r = 0; r < ranks; ++r) {
    RankClock& clock = spread->clocks[std::size_t(r)];
    const CUstream stream = spread->stream(r, root);
    clock.arrived.record(stream);
    if (as.rows(r) > 0) {
      detail::RuntimeState& state = spread->state(r, rt);
      const SpammOptions each = share_options(options, p, stream);
      if (r == 0) {
        DeviceDense<Out> c_rows = rows_of(rt.context, c, as.first_row(r), as.rows(r));
        spamm_share(rt, rows_of(rt.context, a, as.first_row(r), as.rows(r)), b, c_rows, as.d, as.front.tau.tau, each);
      } else {
        HeldCopies<In, Out>& held = *copies[std::size_t(r)];
        const Context& at = state.context;
        DeviceDense<Out> c_rows = rows_of(at, held.c, 0, as.rows(r));
        spamm_share(state, same ? rows_of(at, held.b, as.first_row(r), as.rows(r)) : rows_of(at, held.a, 0, as.rows(r)), held.b, c_rows,
                    as.d, as.front.tau.tau, each);
      }
    }
    clock.finished.record(stream);
  }

  group.start();
  for (int r = 1; r < ranks; ++r) {
    if (as.rows(r) == 0) continue;
    const std::size_t bytes = span(c, as.rows(r));
    group.send(r, reinterpret_cast<const void*>(copies[std::size_t(r)]->c.buffer().ptr()), bytes, 0, spread->stream(r, root));
    group.receive(0, reinterpret_cast<void*>(c.buffer().ptr() + std::size_t(as.first_row(r)) * std::size_t(c.ld()) * sizeof(Out)), bytes, r,
                  spread->side.handle());
  }
  group.end();
  rt.context.make_current();  // NCCL and the other GPUs' launches set their devices current in turn
  spread->transferred.record(spread->side);
  SPARSEJIT_CU(cuStreamWaitEvent, root, spread->transferred.handle(), 0);
  spread->join(root);
  spread->clocked(as.problem_key, as.blocks);
  as.host_ms["enqueue"] = ms_since(enqueue);
  return report(as, devices, options, "sent: B broadcast, each GPU's rows of A sent to it", "gathered into C on rank 0");
}

// C's blocks for a call, each on its GPU: c's part where it is that block already, else in its
// storage where that holds the block at leading dimension n (a re-cut moves rows between GPUs,
// and freeing and allocating a GiB-sized part would synchronize the GPU). A new part gets room
// for a quarter more rows (a tile at least, all of C at most), which covers the shares' drift.
template <class Out>
std::vector<DeviceDense<Out>> c_parts(Spread& spread, detail::RuntimeState& rt, SpreadDense<Out>& c, const Assignment& as) {
  const plan::SpammProblem& p = as.front.problem;
  const bool reusable = c.devices == spread.devices && c.parts.size() == spread.devices.size();
  std::vector<DeviceDense<Out>> parts;
  for (int r = 0; r < spread.ranks(); ++r) {
    const Context& context = spread.state(r, rt).context;
    const std::size_t row_bytes = std::size_t(p.n) * sizeof(Out);
    DeviceDense<Out>* own = reusable ? &c.parts[std::size_t(r)] : nullptr;
    if (own != nullptr && c.first_rows.size() == c.parts.size() && c.first_rows[std::size_t(r)] == as.first_row(r) &&
        own->rows() == as.rows(r) && own->cols() == p.n) {
      parts.push_back(std::move(*own));  // the same block: kept as it is (a caller's part keeps its leading dimension)
      continue;
    }
    DeviceBuffer storage;
    if (own != nullptr && own->ld() == p.n && own->buffer().bytes() >= std::size_t(as.rows(r)) * row_bytes)
      storage = std::move(own->buffer());
    else
      storage = DeviceBuffer(context, std::size_t(std::min(p.m, as.rows(r) + std::max(p.tile, as.rows(r) / 4))) * row_bytes);
    parts.emplace_back(context, std::move(storage), as.rows(r), p.n);
  }
  return parts;
}

template <class In, class Out>
SpammInfo spamm_spread(detail::RuntimeState& rt, const SpreadDense<In>& a, const SpreadDense<In>& b, SpreadDense<Out>& c,
                       const SpammOptions& options) {
  if (a.parts.size() != a.devices.size() || b.parts.size() != b.devices.size())
    throw InvalidInputError("spamm: a spread operand needs one part per GPU");
  if (!a.replicated() || !b.replicated())
    throw InvalidInputError(std::string("spamm: ") + (a.replicated() ? "B" : "A") +
                            " must be replicated on its GPUs (a whole copy on each: Runtime::replicate)");
  if (a.devices != b.devices)
    throw InvalidInputError("spamm: A is on GPUs {" + listed(a.devices) + "} but B on {" + listed(b.devices) + "}");
  const std::vector<int> devices = ranks_of(a.devices, rt.context.info().ordinal);
  if (devices != a.devices)
    throw InvalidInputError("spamm: the operands' first GPU is " + std::to_string(a.devices.front()) + ", not this runtime's " +
                            std::to_string(rt.context.info().ordinal));
  if (!options.devices.empty() && ranks_of(options.devices, rt.context.info().ordinal) != devices)
    throw InvalidInputError("spamm: options.devices {" + listed(options.devices) + "} are not the operands' GPUs {" + listed(devices) + "}");
  const std::shared_ptr<Spread> spread = spread_for(rt, devices);
  std::lock_guard<std::mutex> lock(spread->mutex);
  const CUstream root = static_cast<CUstream>(options.stream);
  const Clock::time_point start = Clock::now();
  const plan::SpammProblem problem = spamm_problem<In, Out>(a.parts[0], b.parts[0], b.cols, whole_of(options));
  spread->call_starts(root);
  spread->follow(root);
  // Each GPU's maps, whole after the slices' broadcasts (kept until its products are enqueued).
  std::vector<cuda::ScratchPool::Block> map_blocks(devices.size());
  std::vector<SpammMaps> maps(devices.size());
  const bool shared_maps = !spamm_reads_copies(problem);
  SpammFront front = shared_maps ? front_from_slices(rt, *spread, problem, a, b, options, map_blocks, maps)
                                 : spamm_front<In, Out>(rt, a.parts[0], b.parts[0], b.cols, whole_of(options));
  Assignment as = assign(rt, *spread, std::move(front), ms_since(start), options,
                         shared_maps ? "resident, norm maps made in slices" : "resident");
  const Clock::time_point enqueue = Clock::now();
  const plan::SpammProblem& p = as.front.problem;
  const int ranks = spread->ranks();
  std::vector<DeviceDense<Out>> parts = c_parts(*spread, rt, c, as);
  as.host_ms["c_parts"] = ms_since(enqueue);
  c.rows = p.m;
  c.cols = p.n;
  c.devices = devices;
  c.first_rows.clear();
  for (int r = 0; r < ranks; ++r) c.first_rows.push_back(as.first_row(r));
  c.parts = std::move(parts);

  for (int r = 0; r < ranks; ++r) {
    RankClock& clock = spread->clocks[std::size_t(r)];
    const CUstream stream = spread->stream(r, root);
    clock.start.record(stream);
    clock.arrived.record(stream);
    if (as.rows(r) > 0) {
      detail::RuntimeState& state = spread->state(r, rt);
      // Its rows' part of A's map, and B's whole map.
      const SpammMaps own{maps[std::size_t(r)].a + std::size_t(as.blocks[std::size_t(r)].first) * std::size_t(p.tile_inner()) * sizeof(double),
                          maps[std::size_t(r)].b};
      spamm_share(state, rows_of(state.context, a.parts[std::size_t(r)], as.first_row(r), as.rows(r)), b.parts[std::size_t(r)],
                  c.parts[std::size_t(r)], as.d, as.front.tau.tau, share_options(options, p, stream), shared_maps ? &own : nullptr);
    }
    clock.finished.record(stream);
  }
  rt.context.make_current();
  spread->join(root);
  spread->clocked(as.problem_key, as.blocks);
  as.host_ms["enqueue"] = ms_since(enqueue);
  return report(as, devices, options, "resident: replicated on every GPU beforehand", "distributed: each GPU's block left on it");
}

template <class T>
SpreadDense<T> replicate(detail::RuntimeState& rt, const DeviceDense<T>& x, const std::vector<int>& asked, void* stream) {
  const std::vector<int> devices = ranks_of(asked, rt.context.info().ordinal);
  const std::shared_ptr<Spread> spread = spread_for(rt, devices);
  std::lock_guard<std::mutex> lock(spread->mutex);
  const CUstream root = static_cast<CUstream>(stream);
  SpreadDense<T> out;
  out.rows = x.rows();
  out.cols = x.cols();
  out.devices = devices;
  out.first_rows.assign(devices.size(), 0);
  out.parts.push_back(rows_of(rt.context, x, 0, x.rows()));
  for (int r = 1; r < spread->ranks(); ++r) out.parts.emplace_back(spread->state(r, rt).context, x.rows(), x.cols(), x.ld());
  spread->follow(root);
  const std::size_t bytes = span(x, x.rows());
  if (bytes > 0) {
    spread->group.start();
    for (int r = 0; r < spread->ranks(); ++r)
      spread->group.broadcast(r, reinterpret_cast<const void*>(x.buffer().ptr()), reinterpret_cast<void*>(out.parts[std::size_t(r)].buffer().ptr()),
                              bytes, 0, spread->stream(r, root));
    spread->group.end();
  }
  rt.context.make_current();
  spread->join(root);
  return out;
}

template <class T>
void gather(detail::RuntimeState& rt, const SpreadDense<T>& x, DeviceDense<T>& into, void* stream) {
  if (into.rows() != x.rows || into.cols() != x.cols)
    throw InvalidInputError("gather: the matrix is " + std::to_string(x.rows) + "x" + std::to_string(x.cols) + " but the target " +
                            std::to_string(into.rows()) + "x" + std::to_string(into.cols()));
  if (x.parts.size() != x.devices.size() || x.first_rows.size() != x.devices.size() || x.devices.empty())
    throw InvalidInputError("gather: a spread matrix needs one part and one first row per GPU");
  const std::vector<int> devices = ranks_of(x.devices, rt.context.info().ordinal);
  if (devices != x.devices)
    throw InvalidInputError("gather: the matrix's first GPU is " + std::to_string(x.devices.front()) + ", not this runtime's " +
                            std::to_string(rt.context.info().ordinal));
  const CUstream root = static_cast<CUstream>(stream);
  const std::size_t row_bytes = std::size_t(x.cols) * sizeof(T), pitch = std::size_t(into.ld()) * sizeof(T);
  const auto row_at = [&](int32_t row) { return into.buffer().ptr() + std::size_t(row) * pitch; };
  const DeviceDense<T>& own = x.parts[0];
  if (x.replicated()) {
    cuda::copy_rows_on_device(rt.context, row_at(0), pitch, own.buffer().ptr(), std::size_t(own.ld()) * sizeof(T), row_bytes,
                              std::size_t(x.rows), root);
    return;
  }
  int32_t next = 0;
  for (std::size_t r = 0; r < x.parts.size(); ++r) {
    if (x.first_rows[r] != next || x.parts[r].cols() != x.cols)
      throw InvalidInputError("gather: part " + std::to_string(r) + " starts at row " + std::to_string(x.first_rows[r]) + " with " +
                              std::to_string(x.parts[r].cols()) + " columns; blocks must follow each other from row 0, " +
                              std::to_string(x.cols) + " columns each");
    next += x.parts[r].rows();
  }
  if (next != x.rows)
    throw InvalidInputError("gather: the blocks cover " + std::to_string(next) + " rows of " + std::to_string(x.rows));
  const std::shared_ptr<Spread> spread = spread_for(rt, devices);
  std::lock_guard<std::mutex> lock(spread->mutex);
  spread->follow(root);
  cuda::copy_rows_on_device(rt.context, row_at(0), pitch, own.buffer().ptr(), std::size_t(own.ld()) * sizeof(T), row_bytes,
                            std::size_t(own.rows()), root);
  // A block arrives whole where its rows are laid out as in `into`, else through scratch.
  std::vector<cuda::ScratchPool::Block> staged(x.parts.size());
  spread->group.start();
  for (int r = 1; r < spread->ranks(); ++r) {
    const DeviceDense<T>& part = x.parts[std::size_t(r)];
    if (part.rows() == 0) continue;
    const std::size_t bytes = span(part, part.rows());
    const bool direct = part.ld() == into.ld();
    if (!direct) staged[std::size_t(r)] = rt.scratch_pool().allocate(bytes, root);
    spread->group.send(r, reinterpret_cast<const void*>(part.buffer().ptr()), bytes, 0, spread->stream(r, root));
    spread->group.receive(0, reinterpret_cast<void*>(direct ? row_at(x.first_rows[std::size_t(r)]) : staged[std::size_t(r)].ptr()), bytes, r,
                          root);
  }
  spread->group.end();
  rt.context.make_current();
  for (int r = 1; r < spread->ranks(); ++r) {
    const DeviceDense<T>& part = x.parts[std::size_t(r)];
    if (staged[std::size_t(r)].ptr() != 0)
      cuda::copy_rows_on_device(rt.context, row_at(x.first_rows[std::size_t(r)]), pitch, staged[std::size_t(r)].ptr(),
                                std::size_t(part.ld()) * sizeof(T), row_bytes, std::size_t(part.rows()), root);
  }
  spread->join(root);
}

#define SPARSEJIT_INSTANTIATE(In, Out)                                                                                         \
  template SpammInfo spamm_on_devices(detail::RuntimeState&, const DeviceDense<In>&, const DeviceDense<In>&, DeviceDense<Out>&, \
                                      const SpammOptions&);                                                                   \
  template SpammInfo spamm_spread(detail::RuntimeState&, const SpreadDense<In>&, const SpreadDense<In>&, SpreadDense<Out>&,     \
                                  const SpammOptions&);                                                                       \
  template SpreadDense<In> replicate(detail::RuntimeState&, const DeviceDense<In>&, const std::vector<int>&, void*);           \
  template void gather(detail::RuntimeState&, const SpreadDense<In>&, DeviceDense<In>&, void*);
SPARSEJIT_INSTANTIATE(float, float)
SPARSEJIT_INSTANTIATE(double, double)
SPARSEJIT_INSTANTIATE(half, float)
SPARSEJIT_INSTANTIATE(bfloat16, float)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
