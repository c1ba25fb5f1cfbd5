#include "tsr/array.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "tsr/comm/process.h"
#include "tsr/core/array_impl.h"
#include "tsr/core/box_copy.h"
#include "tsr/core/convert.h"
#include "tsr/core/value_check.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/timeline.h"

namespace tsr {
namespace detail {

Array make_array(const Shape& shape, DType dtype, const NamedSharding& sharding,
                 std::vector<BufferPtr> buffers, bool weak) {
  auto impl = std::make_shared<ArrayImpl>();
  auto meta = std::make_shared<ArrayMeta>();
  meta->type.shape = shape;
  meta->type.dtype = dtype;
  meta->type.weak = weak;
  meta->type.sharding = type_sharding(sharding, shape);
  meta->sharding = sharding;
  impl->meta = std::move(meta);
  impl->buffers = std::move(buffers);
  return Array(std::move(impl));
}

Array make_traced(const VarPtr& var, uint64_t trace_id) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->meta = std::make_shared<const ArrayMeta>(ArrayMeta{var->type, var->type.sharding});
  impl->var = var;
  impl->trace_id = trace_id;
  return Array(std::move(impl));
}

Array with_given_sharding(const Array& x, const NamedSharding& given) {
  const ArrayImpl& impl = *x.impl();
  const bool plain = impl.sharding() == given;
  if (impl.given ? *impl.given == given : plain) return x;
  auto p = std::make_shared<ArrayImpl>(impl);  // shares the meta and the buffers
  p->given = plain ? nullptr : std::make_shared<const NamedSharding>(given);
  return Array(std::move(p));
}

std::optional<NamedSharding> given_sharding(const Placement& where, const NamedSharding& resolved) {
  if (const auto* ns = std::get_if<NamedSharding>(&where)) return *ns;
  if (const auto* ps = std::get_if<PartitionSpec>(&where))
    if (resolved.concrete_mesh()) return NamedSharding(*resolved.concrete_mesh(), *ps);
  return std::nullopt;
}

void check_concrete(const Array& x, const char* api) {
  if (!x.impl())
    throw ValueError(std::string("[") + api +
                     "] the handle is empty. Got a default-constructed Array; expected one made "
                     "by an op such as array(), zeros() or device_put().");
  if (x.impl()->var)
    throw ConcretizationTypeError(
        std::string("[") + api +
        "] Abstract tracer value encountered where concrete value is "
        "expected: the array is a traced value of type " +
        x.type().str() +
        " inside jit (or another transform), so its data does not exist yet. Got "
        "a traced array; expected a concrete one. Return it from the jitted "
        "function and read it outside, or use cond / while_loop for data-dependent "
        "control flow.");
  if (x.impl()->abstract)
    throw ConcretizationTypeError(
        std::string("[") + api +
        "] the array is abstract (from eval_shape or "
        "shape_dtype_struct): it has the type " +
        x.type().str() +
        " and no data. Got an abstract array; expected a concrete one. Run the function "
        "itself (or its jit) on concrete arrays to compute values.");
  if (x.impl()->deleted)
    throw ValueError(std::string("[") + api +
                     "] the array was deleted: it was donated to a jit "
                     "call. Got a donated array; expected a live one. Use the jit's result, or "
                     "do not donate this argument.");
}

}  // namespace detail

namespace {

const detail::ArrayImpl& get(const std::shared_ptr<detail::ArrayImpl>& impl) {
  if (!impl)
    throw ValueError(
        "[Array] the handle is empty. Got a default-constructed Array; expected one "
        "made by an op such as array(), zeros() or device_put().");
  return *impl;
}

Shape origin_of(const ShardIndex& idx) {
  Shape o(idx.size());
  for (size_t d = 0; d < idx.size(); ++d) o[d] = idx[d].start;
  return o;
}

// True when the device at flat position i must hold zeros because the target adds
// an unreduced axis and i is not at coordinate 0 along it (spec §9).
bool zero_for_unreduced(const NamedSharding& s, int i) {
  // Max/min-unreduced copies of the value reduce to the value: no identity needed.
  if (s.spec().unreduced().empty() || s.spec().unreduced_kind() != UnreducedKind::Sum) return false;
  std::vector<int> c = s.concrete_mesh()->coords(i);
  for (const auto& a : s.spec().unreduced())
    if (c[s.mesh().axis_index(a)] != 0) return true;
  return false;
}

// True when some device of the sharding belongs to another process.
bool spans_processes(const NamedSharding& s) {
  auto& rt = detail::Runtime::get();
  if (rt.process_count() == 1) return false;
  for (const auto& d : s.concrete_mesh()->devices())
    if (!rt.is_local(detail::slot(d))) return true;
  return false;
}

thread_local bool t_skip_same_value_check = false;

// A short text of a value: its type and first elements.
std::string value_summary(const uint8_t* bytes, DType dt, const Shape& shape) {
  const int64_t n = std::min<int64_t>(numel(shape), 6);
  std::vector<double> v(static_cast<size_t>(n));
  detail::convert(bytes, dt, v.data(), DType::Float64, n);
  std::ostringstream os;
  os << dtype_name(dt) << shape_str(shape) << " [";
  for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << v[static_cast<size_t>(i)];
  os << (numel(shape) > n ? ", ...]" : "]");
  return os.str();
}

// JAX's M37: a process-local value put on a mesh with a device on every process is the
// global value, so every process must pass the same one (one small exchange of hashes).
void check_same_value(const std::vector<uint8_t>& bytes, DType dt, const Shape& shape,
                      const NamedSharding& s) {
  auto& rt = detail::Runtime::get();
  if (t_skip_same_value_check || rt.process_count() == 1) return;
  std::set<int> procs;
  for (const auto& d : s.concrete_mesh()->devices()) procs.insert(d.process_index());
  if (static_cast<int>(procs.size()) != rt.process_count()) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  const std::string mine = std::to_string(h) + '\n' + value_summary(bytes.data(), dt, shape);
  auto all = detail::process_allgather(process_indices(), mine, "device_put");
  for (size_t p = 0; p < all.size(); ++p) {
    if (all[p] == mine) continue;
    throw AssertionError(
        "[device_put] Array passed to device_put is not the same on each process. Make sure "
        "you are passing the same value of Array on each process. Expected: " +
        all[0].substr(all[0].find('\n') + 1) + " (process 0); got: " +
        mine.substr(mine.find('\n') + 1) + " (process " + std::to_string(rt.process_index()) +
        "). Pass every process the same global value, or build the array from each "
        "process's piece with make_array_from_process_local_data.");
  }
}

// A value on this process's default device only, where values made without a
// placement live (JAX's uncommitted arrays; process_local.cpp treats them alike).
bool process_local(const Array& x) {
  const auto& devs = x.impl()->sharding().concrete_mesh()->devices();
  return devs.size() == 1 && devs[0] == local_devices()[0];
}

// True when every distinct block has a copy on this process (always, in one process).
bool process_holds_every_block(const detail::ArrayImpl& impl, const Shape& shape) {
  const auto& b = impl.buffers;
  if (std::all_of(b.begin(), b.end(), [](const auto& p) { return p != nullptr; })) return true;
  std::set<Shape> have, all;
  for (int i = 0; i < static_cast<int>(b.size()); ++i) {
    Shape origin = origin_of(impl.sharding().index_of(i, shape));
    all.insert(origin);
    if (b[static_cast<size_t>(i)]) have.insert(origin);
  }
  return have.size() == all.size();
}

}  // namespace

const ArrayType& Array::type() const { return get(impl_).type(); }
const NamedSharding& Array::sharding() const {
  const auto& impl = get(impl_);
  return impl.given ? *impl.given : impl.sharding();
}

const Array& Array::block_until_ready() const {
  detail::check_concrete(*this, "block_until_ready");
  for (const auto& b : get(impl_).buffers)
    if (b) b->wait();  // null: another process's shard
  return *this;
}

std::vector<Shard> Array::addressable_shards() const {
  detail::check_concrete(*this, "addressable_shards");
  const auto& impl = get(impl_);
  const Mesh& mesh = *impl.sharding().concrete_mesh();
  Shape local = impl.sharding().shard_shape(shape());
  std::vector<Shard> out;
  for (int i = 0; i < mesh.size(); ++i) {
    if (!impl.buffers[static_cast<size_t>(i)]) continue;  // another process's device
    Shard s;
    s.device = mesh.devices()[i];
    s.index = impl.sharding().index_of(i, shape());
    s.replica_id = impl.sharding().replica_id(i);
    s.data = std::make_shared<Array>(detail::make_array(
        local, dtype(), NamedSharding(device_mesh(s.device), P()), {impl.buffers[i]}));
    out.push_back(std::move(s));
  }
  return out;
}

bool Array::is_fully_addressable() const {
  detail::check_concrete(*this, "is_fully_addressable");
  auto& rt = detail::Runtime::get();
  for (const auto& d : get(impl_).sharding().concrete_mesh()->devices())
    if (!rt.is_local(detail::slot(d))) return false;
  return true;
}

Array::operator bool() const {
  if (impl_ && impl_->var)
    throw TracerBoolConversionError(
        "[bool] Attempted boolean conversion of traced array with shape " + type().str() +
        ". The truth value of a traced array is not known while tracing (inside jit, grad, "
        "vmap or another transform). Got `if (x)` on a traced array; expected a concrete one. "
        "Use tsr::cond / tsr::switch_case for data-dependent branches, tsr::where to select "
        "values, or tsr::while_loop for data-dependent loops.");
  detail::check_concrete(*this, "bool");
  if (size() != 1)
    throw ValueError(
        "[bool] The truth value of an array with more than one element is "
        "ambiguous. Got shape " +
        shape_str(shape()) + "; expected one element. Use any(x) or all(x).");
  return to_vector<double>()[0] != 0.0;
}

void Array::check_item() const {
  detail::check_concrete(*this, "item");
  if (size() != 1)
    throw ValueError("[item] the array does not hold exactly one element. Got shape " +
                     shape_str(shape()) +
                     "; expected one element. Use to_vector<T>() to read every element.");
}

void Array::copy_to_host(void* dst, DType as) const {
  detail::check_concrete(*this, "to_vector");
  check_dtype(as, "to_vector");
  const auto& impl0 = get(impl_);
  if (!impl0.sharding().spec().unreduced().empty()) {
    // The logical value of an unreduced array is the reduction over its axes.
    // The type's entries: a concrete layout may name Auto axes, which reshard refuses.
    const PartitionSpec& ts = impl0.type().sharding.spec();
    Array reduced = reshard(*this, impl0.sharding().with_spec(ts.with_sets({}, ts.reduced())));
    reduced.copy_to_host(dst, as);
    return;
  }
  detail::timeline::Scope span(detail::timeline::kCaller, "transfer", "device to host");
  if (span.recording())
    span.set_args("\"bytes\":" + std::to_string(numel(shape()) * itemsize(as)) + ",\"shape\":\"" +
                  dtype_short_name(dtype()) + shape_str(shape()) + "\"");
  block_until_ready();
  const auto& impl = get(impl_);
  if (!process_holds_every_block(impl, shape()))
    throw RuntimeError(
        "[to_vector] Fetching value for `Array` that spans non-addressable (non process local) "
        "devices is not possible. Got an array of shape " +
        shape_str(shape()) + " on " + impl.sharding().str() +
        " with blocks only on other processes; expected every "
        "distinct block on this process. You can use tsr::multihost::process_allgather to "
        "read the global array or use .addressable_shards() to inspect the addressable "
        "(process local) shards.");
  // Each shard goes straight into dst (converted on the way when `as` differs): no
  // staging copy of the whole array. Across processes, each distinct block must have
  // a copy here (JAX's rule); one process never fetches another's data implicitly.
  size_t isz = static_cast<size_t>(itemsize(dtype()));
  Shape local = impl.sharding().shard_shape(shape());
  Shape zero(local.size(), 0);
  const bool all_here = std::all_of(impl.buffers.begin(), impl.buffers.end(),
                                    [](const auto& b) { return b != nullptr; });
  std::set<Shape> done;  // block origins written (only when some blocks live elsewhere)
  for (int i = 0; i < static_cast<int>(impl.buffers.size()); ++i) {
    if (all_here ? impl.sharding().replica_id(i) != 0 : !impl.buffers[i]) continue;
    Shape origin = origin_of(impl.sharding().index_of(i, shape()));
    if (!all_here && !done.insert(origin).second) continue;
    detail::HostRead bytes(*impl.buffers[i], static_cast<size_t>(numel(local)) * isz);
    const void* src = bytes.data();
    if (as == dtype())
      detail::copy_box(src, local, zero, dst, shape(), origin, local, isz);
    else
      detail::convert_box(src, dtype(), local, zero, dst, as, shape(), origin, local);
  }
}

const ArrayType& typeof(const Array& x) { return x.type(); }

NamedSharding resolve_placement(const Placement& where, const Shape& shape, const char* api) {
  int rank = static_cast<int>(shape.size());
  NamedSharding s;
  if (std::holds_alternative<std::monostate>(where)) {
    Mesh ctx = get_mesh();
    s = ctx.empty() ? NamedSharding(device_mesh(local_devices()[0]), P()) : NamedSharding(ctx, P());
  } else if (const auto* ns = std::get_if<NamedSharding>(&where)) {
    if (!ns->concrete_mesh())
      throw ValueError(std::string("[") + api + "] the sharding has no devices. Got " + ns->str() +
                       "; expected a NamedSharding on a concrete Mesh. Build it from a Mesh "
                       "(make_mesh) rather than an AbstractMesh.");
    if (ns->concrete_mesh()->empty())
      throw ValueError(std::string("[") + api + "] the sharding's mesh is empty. Got " + ns->str() +
                       "; expected a mesh with devices.");
    s = *ns;
  } else if (const auto* ps = std::get_if<PartitionSpec>(&where)) {
    Mesh ctx = get_mesh();
    if (ctx.empty())
      throw ValueError(std::string("[") + api +
                       "] Please set a mesh via `set_mesh` (or a MeshScope) if a PartitionSpec "
                       "is passed to " +
                       api + ". Got " + ps->repr() +
                       " with no context mesh; or pass a NamedSharding instead.");
    s = NamedSharding(ctx, *ps);
  } else {
    const Device& d = std::get<Device>(where);
    detail::check_device(d, api);
    s = NamedSharding(device_mesh(d), P());
  }
  s.check_rank(rank);
  s = s.normalized(rank);
  // Divisibility: the type first (Explicit axes: ValueError, E23), then the concrete
  // shard shape (the Auto axes types leave out: IndivisibleError, E22), as JAX orders them.
  try {
    type_sharding(s, shape);
  } catch (const ValueError& e) {
    std::string inner = e.what();
    if (inner.rfind("[type] ", 0) == 0) inner = inner.substr(7);
    throw ValueError(std::string("[") + api + "] " + inner);
  }
  try {
    s.shard_shape(shape);
  } catch (const IndivisibleError& e) {
    // JAX wraps this as "One of device_put args was given the sharding ...".
    std::string inner = e.what();
    if (inner.rfind("[NamedSharding] ", 0) == 0) inner = inner.substr(16);
    throw IndivisibleError(std::string("[") + api + "] One of " + api +
                           " args was given the sharding of " + inner);
  }
  return s;
}

namespace {

// Writes each device's block straight from the caller's data, on the calling thread,
// before returning: no staging copy of the whole array (peak = host data + shards),
// and the caller may free `data` as soon as this returns. The buffers are fresh (no
// task can see them yet), so no stream is involved and they are ready at once.
Array put_host(const void* data, DType dtype, const Shape& shape, const Placement& where,
               const char* api) {
  checked_nbytes(shape, itemsize(dtype), api);
  NamedSharding s = resolve_placement(where, shape, api);
  const Mesh& mesh = *s.concrete_mesh();
  size_t isz = static_cast<size_t>(itemsize(dtype));
  detail::timeline::Scope span(detail::timeline::kCaller, "transfer", "host to device");
  if (span.recording())
    span.set_args("\"bytes\":" + std::to_string(numel(shape) * itemsize(dtype)) + ",\"shape\":\"" +
                  dtype_short_name(dtype) + shape_str(shape) +
                  "\",\"devices\":" + std::to_string(mesh.size()));
  Shape local = s.shard_shape(shape);
  size_t local_bytes = static_cast<size_t>(numel(local)) * isz;
  auto& rt = detail::Runtime::get();
  std::vector<detail::BufferPtr> bufs;
  bufs.reserve(static_cast<size_t>(mesh.size()));
  for (int i = 0; i < mesh.size(); ++i) {
    if (!rt.is_local(detail::slot(mesh.devices()[i]))) {  // another process puts its own blocks
      bufs.push_back(nullptr);
      continue;
    }
    auto b = rt.alloc(detail::slot(mesh.devices()[i]), local_bytes);
    if (zero_for_unreduced(s, i)) {
      rt.memory(b->device).fill(b->ptr, 0, local_bytes);
    } else {
      detail::HostWrite w(*b, local_bytes);
      detail::copy_box(data, shape, origin_of(s.index_of(i, shape)), w.data(), local,
                       Shape(local.size(), 0), local, isz);
      w.commit();
    }
    bufs.push_back(std::move(b));
  }
  Array a = detail::make_array(shape, dtype, s, std::move(bufs));
  if (auto g = detail::given_sharding(where, s)) return detail::with_given_sharding(a, *g);
  return a;
}

}  // namespace

Array from_host(const void* data, size_t count, DType dtype, const Shape& shape,
                const Placement& where, const char* api) {
  check_dtype(dtype, api);
  int64_t n = check_shape(shape, api, itemsize(dtype));
  if (count != static_cast<size_t>(n))
    throw ValueError(std::string("[") + api + "] the host data does not match the shape. Got " +
                     std::to_string(count) + " elements for shape " + shape_str(shape) +
                     "; expected " + std::to_string(n) +
                     " (the shape's element count). Pass that many values, or change the shape.");
  return put_host(data, dtype, shape, where, api);
}

Array from_host(const void* data, DType dtype, const Shape& shape, const Placement& where) {
  check_dtype(dtype, "from_host");
  return put_host(data, dtype, shape, where, "from_host");
}

namespace {

// Under a trace, a placement naming Auto axes is a reshard of its Explicit part and a
// sharding constraint of its Auto part (JAX lowers device_put under jit to a
// constraint; reshard alone refuses Auto axes). Null when it names none.
std::optional<Array> traced_auto_put(const Array& x, const Placement& where) {
  const auto* ps = std::get_if<PartitionSpec>(&where);
  const auto* ns = std::get_if<NamedSharding>(&where);
  if ((!ps && !ns) || (ns && !ns->concrete_mesh())) return std::nullopt;
  AbstractMesh m = ps ? get_abstract_mesh() : ns->mesh();
  const PartitionSpec& spec = ps ? *ps : ns->spec();
  if (m.empty()) return std::nullopt;
  auto is_auto = [&](const std::string& a) {
    return m.axis_index(a) >= 0 && m.axis_type(a) == AxisType::Auto;
  };
  bool any = false;
  std::vector<PartitionEntry> typed, autos;
  for (const auto& e : spec.entries()) {
    Axes t, a;
    for (const auto& n : e.axes()) (is_auto(n) ? a : t).push_back(n);
    any = any || !a.empty();
    typed.emplace_back(t);
    autos.emplace_back(a);
  }
  if (!any) return std::nullopt;
  PartitionSpec tspec(typed, spec.unreduced(), spec.reduced(), spec.unreduced_kind());
  Placement tp = ps ? Placement(tspec) : Placement(NamedSharding(*ns->concrete_mesh(), tspec));
  Array y = reshard(x, tp);
  return with_sharding_constraint(y, NamedSharding(m, PartitionSpec(autos)));
}

}  // namespace

Array device_put(const Array& x, const Placement& where) {
  if (x.valid() && x.impl()->var) {  // traced: the reshard primitive (+ a constraint)
    if (auto y = traced_auto_put(x, where)) return *y;
    return reshard(x, where);
  }
  NamedSharding s = resolve_placement(where, x.shape(), "device_put");
  if (!x.is_fully_addressable() && !spans_processes(s)) {
    // Onto this process's devices from a global array: only from blocks held here
    // (another process may not be calling, so no collective can fetch the rest).
    if (!process_holds_every_block(*x.impl(), x.shape()) ||
        !x.impl()->sharding().spec().unreduced().empty())
      throw ValueError(
          "[device_put] When the target is this process's devices, the array must be fully "
          "addressable or have a copy of every block on this process. Got " +
          x.sharding().str() +
          " with blocks only on other processes; expected every block "
          "here. Reshard it to a replicated sharding on its mesh first (device_put(x, "
          "NamedSharding(mesh, P())), a collective every process calls), or use "
          "tsr::multihost::process_allgather.");
    std::vector<uint8_t> bytes(static_cast<size_t>(x.nbytes()));
    x.copy_to_host(bytes.data(), x.dtype());
    return put_host(bytes.data(), x.dtype(), x.shape(), where, "device_put");
  }
  if (spans_processes(s) && process_local(x) && x.impl()->sharding().spec().unreduced().empty()) {
    // A process-local value put on a mesh of many processes is the global value (as
    // JAX's uncommitted arrays): every process passes the same and keeps its blocks.
    // Any other array is global, here and on every other process: it is resharded.
    std::vector<uint8_t> bytes(static_cast<size_t>(x.nbytes()));
    x.copy_to_host(bytes.data(), x.dtype());
    check_same_value(bytes, x.dtype(), x.shape(), s);
    Array r = put_host(bytes.data(), x.dtype(), x.shape(), where, "device_put");
    return x.type().weak ? detail::make_array(x.shape(), x.dtype(), r.impl()->sharding(),
                                              r.impl()->buffers, true)
                         : r;
  }
  Array r = s == x.impl()->sharding() ? x : detail::reshard_to(x, s);
  // JAX keeps the sharding as given (P('i',) on a rank-2 value); types normalise.
  if (auto g = detail::given_sharding(where, s)) return detail::with_given_sharding(r, *g);
  return r;
}

}  // namespace tsr

namespace tsr::detail {
SkipSameValueCheck::SkipSameValueCheck() : previous_(t_skip_same_value_check) {
  t_skip_same_value_check = true;
}
SkipSameValueCheck::~SkipSameValueCheck() { t_skip_same_value_check = previous_; }
}  // namespace tsr::detail
