#include "tsr/core/trace.h"

#include <algorithm>
#include <atomic>

#include "tsr/core/primitive.h"
#include "tsr/error.h"

namespace tsr::detail {
namespace {
thread_local std::vector<Trace*> t_stack;
std::atomic<uint64_t> g_next_id{1};
}  // namespace

Trace::Trace() : id_(g_next_id.fetch_add(1)) { t_stack.push_back(this); }

Trace::~Trace() {
  auto it = std::find(t_stack.begin(), t_stack.end(), this);
  if (it != t_stack.end()) t_stack.erase(it);
}

Trace* current_trace() { return t_stack.empty() ? nullptr : t_stack.back(); }

bool trace_active(uint64_t id) {
  for (const Trace* t : t_stack)
    if (t->id() == id) return true;
  return false;
}

Array Trace::new_input(const ArrayType& t) {
  auto v = std::make_shared<Var>(Var{t});
  prog_.in_vars.push_back(v);
  return make_traced(v, id_);
}

VarPtr Trace::var_for(const Array& x) {
  const ArrayImpl* impl = x.impl().get();
  if (!impl)
    throw ValueError(
        "[trace] an input is an empty Array handle. Got a default-constructed Array; expected "
        "an array made by an op.");
  if (impl->var && impl->trace_id == id_) return impl->var;
  if (impl->var && !trace_active(impl->trace_id))
    throw ValueError("[trace] a traced value escaped its transform. Got a traced array of type " +
                     impl->type().str() +
                     " whose jit (or other transform) has already finished; expected a concrete "
                     "array or a value of an active trace. Return the value from the function "
                     "instead of storing it outside.");
  if (impl->deleted) check_concrete(x, "trace");
  auto it = captured_.find(impl);
  if (it != captured_.end()) return it->second;
  auto v = std::make_shared<Var>(Var{type_of(x)});
  prog_.const_vars.push_back(v);
  prog_.consts.push_back(x);
  captured_.emplace(impl, v);
  return v;
}

ArrayType Trace::type_of(const Array& x) const {
  const ArrayImpl* impl = x.impl().get();
  if (!impl || (impl->var && impl->trace_id == id_)) return x.type();
  // Seen from outside first: the trace this one is nested in (a shard_map body's view
  // reaches the loops, conds and jits traced inside it).
  ArrayType outer = impl->type();
  auto it = std::find(t_stack.begin(), t_stack.end(), this);
  if (it != t_stack.end() && it != t_stack.begin()) {
    const Trace* parent = *(it - 1);
    if (!(impl->var && impl->trace_id == parent->id_)) outer = parent->type_of(x);
  }
  return capture_ ? capture_(outer) : outer;
}

ArrayType seen_type(const Array& x) {
  Trace* t = current_trace();
  return t ? t->type_of(x) : x.type();
}

std::vector<Array> Trace::record(PrimPtr prim, const std::vector<Array>& in,
                                 const std::vector<ArrayType>& out_types) {
  Eqn e;
  e.prim = std::move(prim);
  e.ctx = get_abstract_mesh();
  for (const auto& x : in) e.ins.push_back(var_for(x));
  std::vector<Array> outs;
  for (const auto& t : out_types) {
    auto v = std::make_shared<Var>(Var{t});
    e.outs.push_back(v);
    outs.push_back(make_traced(v, id_));
  }
  prog_.eqns.push_back(std::move(e));
  return outs;
}

Program Trace::finish(const std::vector<Array>& outs) {
  for (const auto& x : outs) prog_.out_vars.push_back(var_for(x));
  return prog_;
}

}  // namespace tsr::detail
