// Resharding by box exchange: every destination shard is cut from the source
// shards that overlap it, one chosen replica per source tile, moved with one
// all_to_allv over the union of devices (local pieces are copied in place).
// Unreduced source axes are first reduced with all_reduce over their groups.
// Two common pairs use their dedicated collective instead (design 0001): dropping
// axes is an all_gather, sharding by unreduced axes a reduce_scatter.
// The plan depends only on (shape, dtype, src, dst), so it is built once and cached.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "tsr/core/array_impl.h"
#include "tsr/core/box_copy.h"
#include "tsr/error.h"
#include "tsr/runtime/executable.h"
#include "tsr/sharding/format.h"
#include "tsr/sharding/reshard_plan.h"

namespace tsr::detail {
namespace {

Box box_of(const NamedSharding& s, int flat, const Shape& shape) {
  ShardIndex idx = s.index_of(flat, shape);
  Box b{Shape(shape.size()), Shape(shape.size())};
  for (size_t d = 0; d < shape.size(); ++d) {
    b.start[d] = idx[d].start;
    b.extent[d] = idx[d].stop - idx[d].start;
  }
  return b;
}

ReduceOp to_reduce_op(UnreducedKind k) {
  switch (k) {
    case UnreducedKind::Sum:
      return ReduceOp::Sum;
    case UnreducedKind::Max:
      return ReduceOp::Max;
    case UnreducedKind::Min:
      return ReduceOp::Min;
  }
  return ReduceOp::Sum;
}

// For each flat position of `m`: the flat positions that agree with it on every axis
// but `axes`, row-major (= mixed radix over `axes`).
std::vector<std::vector<int>> groups_over(const Mesh& m, const std::set<std::string>& axes) {
  std::vector<int> idx;
  for (const auto& a : axes) idx.push_back(m.abstract_mesh().axis_index(a));
  auto key = [&](int flat) {
    std::vector<int> c = m.coords(flat);
    for (int r : idx) c[r] = -1;
    return c;
  };
  std::map<std::vector<int>, std::vector<int>> by_key;
  for (int i = 0; i < m.size(); ++i) by_key[key(i)].push_back(i);
  std::vector<std::vector<int>> out(static_cast<size_t>(m.size()));
  for (int i = 0; i < m.size(); ++i) out[static_cast<size_t>(i)] = by_key[key(i)];
  return out;
}

// Each dimension's axes, major first, for a spec of any length.
std::vector<Axes> dim_axes(const NamedSharding& s, int rank) {
  std::vector<Axes> out(static_cast<size_t>(rank));
  const auto& e = s.spec().entries();
  for (size_t d = 0; d < e.size() && d < out.size(); ++d) out[d] = e[d].axes();
  return out;
}

bool is_prefix(const Axes& a, const Axes& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The element offset of a box of `local` when it is one contiguous row-major run, else -1:
// leading extents 1, one partial dimension, then whole trailing dimensions.
int64_t contiguous_offset(const Shape& start, const Shape& extent, const Shape& local) {
  size_t d = 0, r = local.size();
  while (d < r && extent[d] == 1) ++d;
  for (size_t k = d + 1; k < r; ++k)
    if (extent[k] != local[k]) return -1;
  int64_t off = 0;
  for (size_t k = 0; k < r; ++k) off = off * local[k] + start[k];
  return off;
}

// The dedicated-collective plans (same mesh, no axis added as unreduced, some data):
// - AllGather when every destination entry is a prefix of the source's: each destination
//   block is the union of the source blocks along the dropped axes R, so the group over R
//   gathers whole blocks (after the all_reduce of reduce_axes, if any).
// - ReduceScatter when every source entry is a prefix of the destination's and the axes
//   added, A, are unreduced in the source: the group over A reduce-scatters the pieces
//   of the partial block, then the reduced axes not in A are all-reduced on the piece.
// Both need groups larger than one and never cross a Manual axis. False: exchange.
bool plan_collective(Plan& plan, const Shape& shape, const NamedSharding& src,
                     const NamedSharding& dst, const std::set<std::string>& reduce_axes,
                     const std::set<std::string>& manual_axes, const std::map<int, int>& pos) {
  const Mesh& m = *src.concrete_mesh();
  const int rank = static_cast<int>(shape.size());
  auto sa = dim_axes(src, rank), da = dim_axes(dst, rank);
  bool gather = true, scatter = true;
  std::set<std::string> dropped, added;
  for (int d = 0; d < rank; ++d) {
    const Axes& s = sa[static_cast<size_t>(d)];
    const Axes& t = da[static_cast<size_t>(d)];
    gather = gather && is_prefix(t, s);
    scatter = scatter && is_prefix(s, t);
    if (is_prefix(t, s)) dropped.insert(s.begin() + static_cast<long>(t.size()), s.end());
    if (is_prefix(s, t)) added.insert(t.begin() + static_cast<long>(s.size()), t.end());
  }
  std::set<std::string> over = gather ? dropped : added;
  if (scatter && !gather)
    for (const auto& a : added) scatter = scatter && reduce_axes.count(a);
  if ((!gather && !scatter) || over.empty()) return false;
  for (const auto& a : over)
    if (manual_axes.count(a) || m.abstract_mesh().axis_size(a) < 2) return false;
  plan.kind = gather ? PlanKind::AllGather : PlanKind::ReduceScatter;
  plan.comm = true;
  std::set<std::string> rest;  // reduced axes all-reduced (before a gather, after a scatter)
  for (const auto& a : reduce_axes)
    if (gather || !added.count(a)) rest.insert(a);
  plan.reduce = !rest.empty();
  auto coll = groups_over(m, over);
  auto red = groups_over(m, rest);
  // A group's ranks follow its blocks' positions so that the rank-ordered buffer is
  // often the block itself (direct); the order is the same on every member.
  const NamedSharding& by = gather ? src : dst;
  for (auto& g : coll)
    std::sort(g.begin(), g.end(), [&](int a, int b) {
      return box_of(by, a, shape).start < box_of(by, b, shape).start;
    });
  const Shape& part = gather ? plan.src_local : plan.dst_local;
  const Shape& whole = gather ? plan.dst_local : plan.src_local;
  for (int i = 0; i < m.size(); ++i) {
    DevicePlan& dp = plan.dev[static_cast<size_t>(pos.at(detail::slot(m.devices()[i])))];
    const Shape& origin = gather ? dp.dst_origin : dp.src_origin;
    const auto& g = coll[static_cast<size_t>(i)];
    dp.direct = true;
    for (int k = 0; k < static_cast<int>(g.size()); ++k) {
      dp.coll_ids.push_back(detail::slot(m.devices()[g[k]]));
      if (g[k] == i) dp.coll_rank = k;
      Shape at = box_of(by, g[k], shape).start;
      for (int d = 0; d < rank; ++d) at[d] -= origin[d];
      dp.direct = dp.direct && contiguous_offset(at, part, whole) == k * numel(part);
      dp.coll_at.push_back(std::move(at));
    }
    if (!plan.reduce) continue;
    for (int k = 0; k < static_cast<int>(red[i].size()); ++k) {
      dp.reduce_ids.push_back(detail::slot(m.devices()[red[i][k]]));
      if (red[i][k] == i) dp.reduce_rank = k;
    }
  }
  return true;
}

std::shared_ptr<const Plan> build_plan(const Shape& shape, DType dtype, const NamedSharding& src,
                                       const NamedSharding& dst) {
  const Mesh& ms = *src.concrete_mesh();
  const Mesh& md = *dst.concrete_mesh();
  const auto& us = src.spec().unreduced();
  const auto& ut = dst.spec().unreduced();
  bool same_mesh = ms == md;
  std::set<std::string> reduce_axes, keep_axes, added_axes;
  for (const auto& a : us) (ut.count(a) && same_mesh ? keep_axes : reduce_axes).insert(a);
  for (const auto& a : ut)
    if (!keep_axes.count(a)) added_axes.insert(a);
  // Inside a shard_map body devices along a Manual axis hold different blocks of the
  // same type: data never crosses one (a copy comes from the device's own coordinate).
  std::set<std::string> manual_axes;
  if (same_mesh)
    for (const auto& a : ms.abstract_mesh().axis_names())
      if (ms.abstract_mesh().axis_type(a) == AxisType::Manual) manual_axes.insert(a);
  if (!us.empty() && !ut.empty() && src.spec().unreduced_kind() != dst.spec().unreduced_kind())
    throw ValueError("[reshard] the unreduced kinds differ. Got input " + src.spec().repr() +
                     " and out_sharding " + dst.spec().repr() +
                     "; expected the same unreduced_kind. Reduce first with reshard to a spec "
                     "without unreduced axes.");
  // Added sum axes hold the value at coordinate 0 and zeros elsewhere; added max/min
  // axes hold the value everywhere (copies reduce to it), so they act as replicated.
  if (dst.spec().unreduced_kind() != UnreducedKind::Sum) added_axes.clear();

  auto plan = std::make_shared<Plan>();
  int rank = static_cast<int>(shape.size());
  std::map<int, int> pos;  // device id -> rank in ids
  for (const auto& d : ms.devices())
    pos.emplace(detail::slot(d), static_cast<int>(pos.size())),
        plan->ids.push_back(detail::slot(d));
  for (const auto& d : md.devices())
    if (!pos.count(detail::slot(d)))
      pos.emplace(detail::slot(d), static_cast<int>(plan->ids.size())),
          plan->ids.push_back(detail::slot(d));
  int n = static_cast<int>(plan->ids.size());
  plan->dev.resize(n);
  for (auto& dp : plan->dev) {
    dp.send.resize(n);
    dp.recv.resize(n);
  }
  for (int i = 0; i < ms.size(); ++i) plan->dev[pos[detail::slot(ms.devices()[i])]].src_slot = i;
  for (int j = 0; j < md.size(); ++j) plan->dev[pos[detail::slot(md.devices()[j])]].dst_slot = j;
  plan->src_local = src.shard_shape(shape);
  plan->dst_local = dst.shard_shape(shape);
  for (auto& dp : plan->dev) {
    if (dp.src_slot >= 0) dp.src_origin = box_of(src, dp.src_slot, shape).start;
    if (dp.dst_slot >= 0) dp.dst_origin = box_of(dst, dp.dst_slot, shape).start;
  }
  plan->dtype = dtype;
  plan->reduce_op = to_reduce_op(src.spec().unreduced_kind());
  if (same_mesh && added_axes.empty() && numel(shape) > 0 &&
      plan_collective(*plan, shape, src, dst, reduce_axes, manual_axes, pos))
    return plan;

  // Reduction groups: source devices that agree on every axis but the reduced ones,
  // in row-major order (= mixed radix over the reduced axes).
  if (!reduce_axes.empty()) {
    plan->reduce = true;
    auto groups = groups_over(ms, reduce_axes);
    for (int i = 0; i < ms.size(); ++i) {
      auto& dp = plan->dev[pos[detail::slot(ms.devices()[i])]];
      const auto& g = groups[static_cast<size_t>(i)];
      for (int k = 0; k < static_cast<int>(g.size()); ++k) {
        dp.reduce_ids.push_back(detail::slot(ms.devices()[g[k]]));
        if (g[k] == i) dp.reduce_rank = k;
      }
    }
  }

  // Source tiles: devices grouped by the chunk they hold.
  std::map<std::vector<int64_t>, std::vector<int>> tiles;
  for (int i = 0; i < ms.size(); ++i) tiles[src.chunk_of(i, rank)].push_back(i);
  auto coord_on = [](const Mesh& m, int flat, const std::string& a) {
    return m.coords(flat)[m.abstract_mesh().axis_index(a)];
  };

  for (int j = 0; j < md.size(); ++j) {
    int t = pos[detail::slot(md.devices()[j])];
    auto& dt = plan->dev[t];
    for (const auto& a : added_axes)
      if (coord_on(md, j, a) != 0) dt.zero = true;
    if (dt.zero) continue;
    Box bj = box_of(dst, j, shape);
    for (const auto& [chunk, holders] : tiles) {
      std::vector<int> cand;
      for (int i : holders) {
        bool ok = true;
        for (const auto& a : keep_axes) ok = ok && coord_on(ms, i, a) == coord_on(md, j, a);
        for (const auto& a : manual_axes) ok = ok && coord_on(ms, i, a) == coord_on(md, j, a);
        if (ok) cand.push_back(i);
      }
      if (cand.empty()) continue;
      Box inter = intersect(box_of(src, cand[0], shape), bj);
      if (is_empty(inter)) continue;
      int chosen = cand[j % cand.size()];
      for (int i : cand)
        if (detail::slot(ms.devices()[i]) == detail::slot(md.devices()[j])) chosen = i;
      int s = pos[detail::slot(ms.devices()[chosen])];
      if (s == t) {
        dt.local.push_back(inter);
      } else {
        plan->dev[s].send[t].push_back(inter);
        dt.recv[s].push_back(inter);
        plan->comm = true;
      }
    }
  }
  int64_t isz = itemsize(dtype);
  for (auto& dp : plan->dev) {
    dp.send_counts.assign(n, 0);
    dp.send_displs.assign(n, 0);
    dp.recv_counts.assign(n, 0);
    dp.recv_displs.assign(n, 0);
    for (int p = 0; p < n; ++p) {
      dp.send_displs[p] = dp.send_bytes;
      for (const auto& b : dp.send[p]) dp.send_counts[p] += b.numel() * isz;
      dp.send_bytes += dp.send_counts[p];
      dp.recv_displs[p] = dp.recv_bytes;
      for (const auto& b : dp.recv[p]) dp.recv_counts[p] += b.numel() * isz;
      dp.recv_bytes += dp.recv_counts[p];
    }
    // A piece that is one contiguous run of its block needs no pack / unpack copy.
    auto in_place = [&](const std::vector<std::vector<Box>>& pieces, const Shape& origin,
                        const Shape& local) {
      std::vector<int64_t> at(static_cast<size_t>(n), 0);
      for (int p = 0; p < n; ++p) {
        const auto& boxes = pieces[static_cast<size_t>(p)];
        if (boxes.empty()) continue;
        if (boxes.size() > 1) return std::vector<int64_t>{};
        Shape start = boxes[0].start;
        for (size_t d = 0; d < start.size(); ++d) start[d] -= origin[d];
        int64_t off = contiguous_offset(start, boxes[0].extent, local);
        if (off < 0) return std::vector<int64_t>{};
        at[static_cast<size_t>(p)] = off * isz;
      }
      return at;
    };
    dp.send_in_place = in_place(dp.send, dp.src_origin, plan->src_local);
    dp.recv_in_place = in_place(dp.recv, dp.dst_origin, plan->dst_local);
  }
  return plan;
}

}  // namespace

std::shared_ptr<const Plan> get_plan(const Shape& shape, DType dtype, const NamedSharding& src,
                                     const NamedSharding& dst) {
  struct Key {
    Shape shape;
    DType dtype;
    NamedSharding src, dst;
    bool operator==(const Key& o) const {
      return shape == o.shape && dtype == o.dtype && src == o.src && dst == o.dst;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = k.src.hash() * 31 + k.dst.hash() * 7 + static_cast<size_t>(k.dtype);
      for (int64_t d : k.shape) h = h * 1000003 + static_cast<size_t>(d);
      return h;
    }
  };
  static std::mutex mu;
  static std::unordered_map<Key, std::shared_ptr<const Plan>, KeyHash> cache;
  Key key{shape, dtype, src, dst};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto plan = build_plan(shape, dtype, src, dst);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 4096) cache.clear();  // bound memory for programs with many shapes
  cache.emplace(key, plan);
  return plan;
}

namespace {
Shape relative(const Shape& start, const Shape& origin) {
  Shape r(start.size());
  for (size_t d = 0; d < start.size(); ++d) r[d] = start[d] - origin[d];
  return r;
}

}  // namespace

std::vector<std::string> plan_steps(const Plan& plan) {
  std::string reduce = std::string("all_reduce ") + reduce_op_name(plan.reduce_op);
  auto over = [&](size_t n) { return " over " + std::to_string(n) + " devices"; };
  std::vector<std::string> what;
  switch (plan.kind) {
    case PlanKind::Exchange:
      if (plan.reduce) what.push_back(reduce);
      if (plan.comm) what.push_back("all_to_allv" + over(plan.ids.size()));
      break;
    case PlanKind::AllGather:
      if (plan.reduce) what.push_back(reduce);
      what.push_back("all_gather" + over(plan.dev[0].coll_ids.size()));
      break;
    case PlanKind::ReduceScatter:
      what.push_back(std::string("reduce_scatter ") + reduce_op_name(plan.reduce_op) +
                     over(plan.dev[0].coll_ids.size()));
      if (plan.reduce) what.push_back(reduce);
      break;
  }
  if (what.empty()) what.push_back("local copy");
  return what;
}

std::vector<Group> plan_groups(const Plan& plan, int u) {
  auto& rt = Runtime::get();
  const DevicePlan& dp = plan.dev[u];
  std::vector<Group> groups;
  Group reduce;
  if (plan.reduce && dp.src_slot >= 0) reduce = Group(rt.group(dp.reduce_ids), dp.reduce_rank);
  switch (plan.kind) {
    case PlanKind::Exchange:
      if (reduce.impl()) groups.push_back(reduce);
      if (plan.comm) groups.emplace_back(rt.group(plan.ids), u);
      break;
    case PlanKind::AllGather:
      if (reduce.impl()) groups.push_back(reduce);
      groups.emplace_back(rt.group(dp.coll_ids), dp.coll_rank);
      break;
    case PlanKind::ReduceScatter:
      groups.emplace_back(rt.group(dp.coll_ids), dp.coll_rank);
      if (reduce.impl()) groups.push_back(reduce);
      break;
  }
  return groups;
}

namespace {

// A temporary on `dev` from its caching allocator (device memory on an accelerator):
// a std::vector would zero it and, at collective sizes, fault in fresh pages on every call.
struct Scratch {
  CachingAllocator* alloc;
  size_t bytes;
  void* ptr;
  Scratch(int dev, size_t n)
      : alloc(&Runtime::get().allocator(dev)),
        bytes(std::max<size_t>(n, 1)),
        ptr(alloc->allocate(bytes)) {}
  ~Scratch() { alloc->release(ptr, bytes); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* data() const { return static_cast<char*>(ptr); }
};

// all_gather of whole source blocks; scattered into the destination block unless the
// ranks' blocks already sit there in rank order.
void run_all_gather(const Plan& plan, const DevicePlan& dp, int dev, const DeviceMemory& mem,
                    const void* sp, void* dst, GroupSequence& seq) {
  const size_t isz = static_cast<size_t>(itemsize(plan.dtype));
  const int64_t count = numel(plan.src_local);
  const size_t block = static_cast<size_t>(count) * isz;
  std::optional<Scratch> reduced, gathered;
  if (plan.reduce) {
    reduced.emplace(dev, block);
    seq.next().all_reduce(sp, reduced->ptr, count, plan.dtype, plan.reduce_op);
    sp = reduced->ptr;
  }
  if (dp.direct) {
    seq.next().all_gather(sp, dst, count, plan.dtype);
    return;
  }
  gathered.emplace(dev, block * dp.coll_at.size());
  seq.next().all_gather(sp, gathered->ptr, count, plan.dtype);
  const Shape zero(plan.src_local.size(), 0);
  for (size_t k = 0; k < dp.coll_at.size(); ++k)
    mem.copy_box(gathered->data() + k * block, plan.src_local, zero, dst, plan.dst_local,
                 dp.coll_at[k], plan.src_local, isz);
}

// reduce_scatter of the partial block's pieces (packed in rank order unless they already
// are), then the all_reduce over the reduced axes the destination does not shard by.
void run_reduce_scatter(const Plan& plan, const DevicePlan& dp, int dev, const DeviceMemory& mem,
                        const void* sp, void* dst, GroupSequence& seq) {
  const size_t isz = static_cast<size_t>(itemsize(plan.dtype));
  const int64_t count = numel(plan.dst_local);
  const size_t piece = static_cast<size_t>(count) * isz;
  std::optional<Scratch> packed;
  if (!dp.direct) {
    packed.emplace(dev, piece * dp.coll_at.size());
    const Shape zero(plan.dst_local.size(), 0);
    for (size_t k = 0; k < dp.coll_at.size(); ++k)
      mem.copy_box(sp, plan.src_local, dp.coll_at[k], packed->data() + k * piece, plan.dst_local,
                   zero, plan.dst_local, isz);
    sp = packed->ptr;
  }
  seq.next().reduce_scatter(sp, dst, count, plan.dtype, plan.reduce_op);
  if (plan.reduce) seq.next().all_reduce(dst, dst, count, plan.dtype, plan.reduce_op);
}

}  // namespace

void run_plan(const Plan& plan, int u, const void* sp, void* dst, GroupSequence& seq) {
  const DevicePlan& dp = plan.dev[u];
  int dev = plan.ids[u];
  const DeviceMemory mem = Runtime::get().memory(dev);
  if (plan.kind == PlanKind::AllGather) return run_all_gather(plan, dp, dev, mem, sp, dst, seq);
  if (plan.kind == PlanKind::ReduceScatter)
    return run_reduce_scatter(plan, dp, dev, mem, sp, dst, seq);
  size_t isz = static_cast<size_t>(itemsize(plan.dtype));
  size_t dst_bytes = static_cast<size_t>(numel(plan.dst_local)) * isz;
  std::optional<Scratch> reduced;
  int64_t src_n = numel(plan.src_local);
  // This device keeps its block whole (one local box, equal shapes, so equal origins):
  // the all_reduce writes the destination and sends read from there, no temporary + copy.
  const bool whole = plan.reduce && dst && dp.src_slot >= 0 && !dp.zero &&
                     plan.src_local == plan.dst_local && dp.local.size() == 1 &&
                     dp.local[0].extent == plan.dst_local;
  if (whole) {
    seq.next().all_reduce(sp, dst, src_n, plan.dtype, plan.reduce_op);
    sp = dst;
  } else if (plan.reduce && dp.src_slot >= 0) {
    reduced.emplace(dev, static_cast<size_t>(src_n) * isz);
    seq.next().all_reduce(sp, reduced->ptr, src_n, plan.dtype, plan.reduce_op);
    sp = reduced->ptr;
  }
  if (dst && dp.zero) mem.fill(dst, 0, dst_bytes);
  if (!whole)
    for (const Box& b : dp.local)
      mem.copy_box(sp, plan.src_local, relative(b.start, dp.src_origin), dst, plan.dst_local,
                   relative(b.start, dp.dst_origin), b.extent, isz);
  if (!plan.comm) return;
  // Pieces go from the source block and land in the destination block in place where
  // each is one contiguous run (design 0001); otherwise through packed temporaries.
  const bool send_direct = !dp.send_in_place.empty(), recv_direct = !dp.recv_in_place.empty();
  std::optional<Scratch> sendbuf, recvbuf;
  const void* send = sp;
  void* recv = dst;
  if (!send_direct) {
    sendbuf.emplace(dev, static_cast<size_t>(dp.send_bytes));
    size_t off = 0;
    for (const auto& boxes : dp.send)
      for (const Box& b : boxes) {
        mem.copy_box(sp, plan.src_local, relative(b.start, dp.src_origin), sendbuf->data() + off,
                     b.extent, Shape(b.extent.size(), 0), b.extent, isz);
        off += static_cast<size_t>(b.numel()) * isz;
      }
    send = sendbuf->ptr;
  }
  if (!recv_direct) {
    recvbuf.emplace(dev, static_cast<size_t>(dp.recv_bytes));
    recv = recvbuf->ptr;
  }
  seq.next().all_to_allv(send, dp.send_counts, send_direct ? dp.send_in_place : dp.send_displs,
                         recv, dp.recv_counts, recv_direct ? dp.recv_in_place : dp.recv_displs);
  if (recv_direct) return;
  size_t off = 0;
  for (const auto& boxes : dp.recv)
    for (const Box& b : boxes) {
      mem.copy_box(recvbuf->data() + off, b.extent, Shape(b.extent.size(), 0), dst, plan.dst_local,
                   relative(b.start, dp.dst_origin), b.extent, isz);
      off += static_cast<size_t>(b.numel()) * isz;
    }
}

namespace {

// Before a reshard that crosses processes, they agree on what moves where (as on a
// lowered program): processes that name different source devices would otherwise
// wait on different groups until the timeout.
void check_same_reshard(const Plan& plan, const Array& x, const NamedSharding& dst) {
  auto& rt = Runtime::get();
  if (rt.process_count() == 1) return;
  std::set<int> procs;
  for (int id : plan.ids) procs.insert(id / rt.local_count());
  if (procs.size() < 2 || !procs.count(rt.process_index())) return;
  std::ostringstream os;
  os << "reshard " << x.type().str() << '\n' << "from " << x.impl()->sharding().str() << " on";
  for (const auto& d : x.impl()->sharding().concrete_mesh()->devices())
    os << ' ' << detail::slot(d);
  os << '\n' << "to " << dst.str() << " on";
  for (const auto& d : dst.concrete_mesh()->devices()) os << ' ' << detail::slot(d);
  check_same_text(std::vector<int>(procs.begin(), procs.end()), os.str(), "reshard");
}

}  // namespace

Array reshard_to(const Array& x, const NamedSharding& dst) {
  const Shape& shape = x.shape();
  auto plan = get_plan(shape, x.dtype(), x.impl()->sharding(), dst);
  const auto& impl = *x.impl();
  const Mesh& md = *dst.concrete_mesh();
  size_t dst_bytes = static_cast<size_t>(numel(plan->dst_local)) * itemsize(x.dtype());
  auto& rt = Runtime::get();
  check_same_reshard(*plan, x, dst);
  std::vector<BufferPtr> out(md.size());
  std::lock_guard<std::mutex> lock(rt.dispatch_mutex());
  for (int u = 0; u < static_cast<int>(plan->ids.size()); ++u) {
    const DevicePlan& dp = plan->dev[u];
    int dev = plan->ids[u];
    if (!rt.is_local(dev)) continue;  // another process runs that device's part
    std::vector<BufferPtr> ins, outs;
    BufferPtr ib = dp.src_slot >= 0 ? impl.buffers[dp.src_slot] : nullptr;
    if (ib) ins.push_back(ib);
    BufferPtr ob;
    if (dp.dst_slot >= 0) {
      ob = rt.alloc(dev, dst_bytes);
      out[dp.dst_slot] = ob;
      outs.push_back(ob);
    }
    std::vector<Group> groups = plan_groups(*plan, u);
    launch(
        dev, ins, outs,
        [plan, u, ib, ob, groups] {
          GroupSequence seq(groups);
          try {
            run_plan(*plan, u, ib ? ib->ptr : nullptr, ob ? ob->ptr : nullptr, seq);
          } catch (const std::exception& e) {
            seq.fail_rest("reshard", e.what());
            throw;
          }
        },
        groups, "reshard");
  }
  return make_array(shape, x.dtype(), dst, std::move(out), x.type().weak);
}

}  // namespace tsr::detail
