// bind(): the one entry point of every op. Traced: record. Eager: a one-equation
// program lowered by the same partitioner as jit, cached by (primitive, input
// types and layouts, context mesh), then run.
#include <mutex>
#include <unordered_map>

#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/runtime/caches.h"
#include "tsr/runtime/executable.h"

namespace tsr::detail {
namespace {

struct EagerKey {
  PrimPtr prim;
  std::vector<std::shared_ptr<ArrayImpl>> in;  // kept only for comparing types/layouts
  AbstractMesh ctx;
  size_t hash = 0;
  bool operator==(const EagerKey& o) const {
    if (hash != o.hash || in.size() != o.in.size() || !prim->equals(*o.prim) || !(ctx == o.ctx))
      return false;
    for (size_t i = 0; i < in.size(); ++i) {
      const ArrayImpl &a = *in[i], &b = *o.in[i];
      if (a.meta == b.meta) continue;  // the same output of one executable
      if (a.type().shape != b.type().shape || a.type().dtype != b.type().dtype ||
          a.type().weak != b.type().weak || !(a.sharding() == b.sharding()))
        return false;
    }
    return true;
  }
};
struct EagerHash {
  size_t operator()(const EagerKey& k) const { return k.hash; }
};
struct EagerEntry {
  std::shared_ptr<const Executable> ex;
};

std::mutex g_cache_mu;
std::unordered_map<EagerKey, EagerEntry, EagerHash>& cache() {
  static auto* c = new std::unordered_map<EagerKey, EagerEntry, EagerHash>();
  return *c;
}

size_t impl_hash(const ArrayImpl& a) {
  size_t h =
      a.sharding().hash() * 131 + static_cast<size_t>(a.type().dtype) * 7 + (a.type().weak ? 1 : 0);
  for (int64_t d : a.type().shape) h = h * 1000003 + static_cast<size_t>(d);
  return h;
}

std::vector<Array> eager(const PrimPtr& prim, const std::vector<Array>& in) {
  // One key per thread, reused: the hit path allocates nothing for the key.
  thread_local EagerKey key;
  key.prim = prim;
  key.ctx = get_abstract_mesh();
  key.hash = prim->hash() * 31 + key.ctx.hash();
  key.in.clear();
  for (const auto& x : in) {
    check_concrete(x, prim->name());
    key.in.push_back(x.impl());
    key.hash = key.hash * 1000003 + impl_hash(*x.impl());
  }
  std::shared_ptr<const Executable> ex;
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    auto it = cache().find(key);
    if (it != cache().end()) ex = it->second.ex;
  }
  struct Release {  // drop the key's references to the inputs once done
    ~Release() {
      key.in.clear();
      key.prim.reset();
    }
  } release;
  if (!ex) {
    std::vector<ArrayType> in_t;
    std::vector<NamedSharding> layouts;
    for (const auto& x : in) {
      in_t.push_back(x.type());
      layouts.push_back(x.impl()->sharding());
    }
    std::vector<ArrayType> out_t = infer_types(*prim, in_t);
    Program p;
    Eqn e;
    e.prim = prim;
    for (const auto& t : in_t) {
      auto v = std::make_shared<Var>(Var{t});
      p.in_vars.push_back(v);
      e.ins.push_back(v);
    }
    for (const auto& t : out_t) {
      auto v = std::make_shared<Var>(Var{t});
      p.out_vars.push_back(v);
      e.outs.push_back(v);
    }
    p.eqns.push_back(std::move(e));
    ex = lower(p, layouts);
    // Keep only types in the stored key, not the input arrays' buffers.
    EagerKey stored;
    stored.prim = key.prim;
    stored.ctx = key.ctx;
    stored.hash = key.hash;
    for (const auto& impl : key.in) {
      auto light = std::make_shared<ArrayImpl>();
      light->meta = impl->meta;
      stored.in.push_back(std::move(light));
    }
    std::lock_guard<std::mutex> lock(g_cache_mu);
    if (cache().size() > 8192) cache().clear();  // bound memory for shape-varying programs
    cache().emplace(std::move(stored), EagerEntry{ex});
  }
  return ex->run(in);
}

}  // namespace

void clear_eager_cache() {
  // Destroyed outside the lock: an executable's teardown releases buffers and may
  // drop objects (captured callables) that dispatch themselves.
  std::unordered_map<EagerKey, EagerEntry, EagerHash> old;
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    old.swap(cache());
  }
}

std::vector<Array> bind(PrimPtr prim, const std::vector<Array>& in0) {
  // Manual-spmd §3.4: operands of an ordinary primitive that vary over fewer manual
  // axes than the others get a pvary (a free cast) first. Outside shard_map no value
  // has a vma, and the check is one pass over the operands.
  std::vector<Array> fixed;
  const std::vector<Array>* inp = &in0;
  if (!prim->custom_vma() && vma_differs(in0)) {
    fixed = auto_pvary(in0);
    inp = &fixed;
  }
  const std::vector<Array>& in = *inp;
  if (Trace* t = current_trace()) {
    std::vector<ArrayType> in_t;
    in_t.reserve(in.size());
    for (const auto& x : in) {
      if (!x.valid())
        throw ValueError(std::string("[") + prim->name() +
                         "] an input is an empty Array handle. Got a default-constructed Array; "
                         "expected an array made by an op.");
      in_t.push_back(t->type_of(x));
    }
    return t->record(prim, in, infer_types(*prim, in_t));
  }
  for (const auto& x : in)
    if (x.valid() && x.impl()->var)
      throw ValueError(std::string("[") + prim->name() +
                       "] a traced value escaped its transform. Got a traced array of type " +
                       x.type().str() +
                       " outside the jit (or other transform) that made it; expected a concrete "
                       "array. Return the value from the function instead of storing it outside.");
  if (Runtime::get().process_count() > 1) {
    std::vector<Array> placed = in;
    if (place_process_local(placed, mesh_named_by(*prim))) return eager(prim, placed);
  }
  return eager(prim, in);
}

Array bind1(PrimPtr prim, const std::vector<Array>& in) { return bind(std::move(prim), in)[0]; }

}  // namespace tsr::detail
