// jit: trace once per input signature (types + static arguments), lower once per
// input layout, run the executable. Inside another trace a call records one
// `jit` equation holding the sub-program (nested jit).
#include <mutex>
#include <unordered_map>

#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/runtime/executable.h"
#include "tsr/transforms.h"

namespace tsr::detail {

namespace {

/** Deepest nesting of jit traces on one thread (recursion guard). */
constexpr int kMaxJitTraceDepth = 64;

struct SigKey {
  std::string statics;
  std::vector<ArrayType> types;
  size_t hash = 0;
  bool operator==(const SigKey& o) const {
    if (hash != o.hash || statics != o.statics || types.size() != o.types.size()) return false;
    for (size_t i = 0; i < types.size(); ++i) {
      const ArrayType &a = types[i], &b = o.types[i];
      if (a.shape != b.shape || a.dtype != b.dtype || a.weak != b.weak || a.vma != b.vma ||
          !(a.sharding == b.sharding))
        return false;
    }
    return true;
  }
};
struct SigHash {
  size_t operator()(const SigKey& k) const { return k.hash; }
};

// Nested jit traces on this thread: a jitted function that calls itself would
// otherwise recurse until the stack overflows.
thread_local int t_jit_depth = 0;
struct DepthGuard {
  DepthGuard() { ++t_jit_depth; }
  ~DepthGuard() { --t_jit_depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

// Splits a jit out_sharding that names Auto axes (spec §13.6): the type takes the
// Explicit part (through reshard), the result's concrete layout the whole spec.
// Checks rank and divisibility of the whole spec (E21, E22). Specs without Auto
// axes come back unchanged with no layout.
Placement split_auto_axes(const Placement& p, const Array& out, size_t index,
                          std::optional<NamedSharding>& layout) {
  const PartitionSpec* ps = std::get_if<PartitionSpec>(&p);
  const NamedSharding* ns = std::get_if<NamedSharding>(&p);
  if (!ps && !ns) return p;
  AbstractMesh m = ps ? get_abstract_mesh() : ns->mesh();
  const PartitionSpec& spec = ps ? *ps : ns->spec();
  bool any_auto = false;
  for (const auto& a : spec.partition_axes())
    any_auto = any_auto || (m.axis_index(a) >= 0 && m.axis_type(a) == AxisType::Auto);
  if (!any_auto) return p;  // reshard checks (and refuses) the rest
  NamedSharding full = ns ? *ns : NamedSharding(m, spec);
  if (ps) {
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == m) full = NamedSharding(ctx, spec);
  }
  // JAX's pjit_check_aval_sharding wording around E21 / E22.
  std::string what =
      "One of pjit outputs with pytree key path result[" + std::to_string(index) + "]";
  auto inner = [](const Error& e) {
    std::string m = e.what();
    return m.rfind("[NamedSharding] ", 0) == 0 ? m.substr(16) : m;
  };
  try {
    full.check_rank(out.ndim());
  } catch (const ValueError& e) {
    throw ValueError("[jit] " + what + " is incompatible with its sharding annotation " +
                     full.str() + ": " + inner(e));
  }
  full = full.normalized(out.ndim());
  try {
    full.shard_shape(out.shape());
  } catch (const IndivisibleError& e) {
    throw IndivisibleError("[jit] " + what + " was given the sharding " + inner(e) + ".");
  }
  layout = full;
  std::vector<PartitionEntry> kept;
  for (const auto& e : full.spec().entries()) {
    Axes axes;
    for (const auto& a : e.axes())
      if (m.axis_type(a) != AxisType::Auto) axes.push_back(a);
    kept.emplace_back(std::move(axes));
  }
  PartitionSpec typed(kept, spec.unreduced(), spec.reduced(), spec.unreduced_kind());
  if (ps) return typed;
  return full.concrete_mesh() ? NamedSharding(*full.concrete_mesh(), typed)
                              : NamedSharding(full.mesh(), typed);
}

struct Entry {
  std::shared_ptr<const Program> prog;
  std::vector<std::optional<NamedSharding>> out_layouts;  // concrete layouts of Auto axes
  std::vector<std::pair<std::vector<NamedSharding>, std::shared_ptr<const Executable>>> exes;
};

}  // namespace

struct JitCore::Impl {
  JitOptions opts;
  std::mutex mu;
  std::unordered_map<SigKey, std::shared_ptr<Entry>, SigHash> cache;
  int traces = 0;

  std::vector<Array> apply_in_shardings(const std::vector<Array>& args) {
    std::vector<Array> out = args;
    if (!opts.in_shardings.empty() && opts.in_shardings.size() != args.size())
      throw ValueError(
          "[jit] jit in_shardings specification must be a tree prefix of the positional "
          "arguments tuple. In particular, jit in_shardings must either be a Sharding, a "
          "PartitionSpec, or a tuple of length equal to the number of positional arguments. But "
          "jit in_shardings is the wrong length: got a tuple or list of length " +
          std::to_string(opts.in_shardings.size()) + " for an args tuple of length " +
          std::to_string(args.size()) + " (jit of `" + opts.name +
          "`; counted in Array leaves). Give one entry per Array leaf; std::monostate{} keeps "
          "that leaf's own sharding.");
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].valid())
        throw ValueError("[jit] argument leaf " + std::to_string(i) +
                         " is an empty Array handle. Got a default-constructed Array; expected "
                         "an array made by an op.");
      if (i < opts.in_shardings.size() &&
          !std::holds_alternative<std::monostate>(opts.in_shardings[i])) {
        if (const auto* ps = std::get_if<PartitionSpec>(&opts.in_shardings[i]))
          for (const auto& e : ps->entries())
            if (e.is_unconstrained())
              throw ValueError(
                  "[jit] Unconstrained dims are not allowed when passed to "
                  "in_shardings: " +
                  ps->repr() + ". Name the axes or use None.");
        out[i] = out[i].impl()->var ? reshard(out[i], opts.in_shardings[i])
                                    : device_put(out[i], opts.in_shardings[i]);
      }
    }
    return out;
  }

  std::shared_ptr<Entry> entry_for(const std::vector<Array>& args, const std::string& statics,
                                   const Fn& fn) {
    SigKey key;
    key.statics = statics;
    key.hash = std::hash<std::string>()(statics);
    for (const auto& a : args) {
      const ArrayType& t = a.type();
      key.types.push_back(t);
      size_t h = t.sharding.hash() * 131 + static_cast<size_t>(t.dtype) * 7 + (t.weak ? 1 : 0);
      for (int64_t d : t.shape) h = h * 1000003 + static_cast<size_t>(d);
      key.hash = key.hash * 1000003 + h;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = cache.find(key);
      if (it != cache.end()) return it->second;
    }
    auto e = std::make_shared<Entry>();
    if (t_jit_depth >= kMaxJitTraceDepth)
      throw ValueError("[jit] tracing jit of `" + opts.name + "` would nest " +
                       std::to_string(t_jit_depth + 1) + " jit traces (limit " +
                       std::to_string(kMaxJitTraceDepth) +
                       "): the function calls itself through jit without end. Got trace depth " +
                       std::to_string(t_jit_depth + 1) + "; expected at most " +
                       std::to_string(kMaxJitTraceDepth) +
                       ". Stop the recursion: give it a base case on a static argument (jit "
                       "traces once per static value), or write the repetition as a C++ loop of "
                       "ops (or a control-flow op) instead of a recursive jitted call.");
    DepthGuard depth;
    {
      Trace trace;
      std::vector<Array> ins;
      for (const auto& t : key.types) ins.push_back(trace.new_input(t));
      std::vector<Array> outs = fn(ins);
      if (!opts.out_shardings.empty() && opts.out_shardings.size() != outs.size())
        throw ValueError(
            "[jit] jit out_shardings specification must be a tree prefix of the corresponding "
            "value. Got " +
            std::to_string(opts.out_shardings.size()) + " out_shardings for " +
            std::to_string(outs.size()) + (outs.size() == 1 ? " result" : " results") +
            " of jit of `" + opts.name +
            "`; expected one entry per result Array. Use std::monostate{} for a result that "
            "keeps its traced sharding.");
      for (size_t i = 0; i < outs.size() && i < opts.out_shardings.size(); ++i)
        if (!std::holds_alternative<std::monostate>(opts.out_shardings[i])) {
          if (const auto* ps = std::get_if<PartitionSpec>(&opts.out_shardings[i]))
            for (const auto& en : ps->entries())
              if (en.is_unconstrained())
                throw ValueError(
                    "[jit] Unconstrained dims are not allowed when passed to "
                    "out_shardings: " +
                    ps->repr() + ". Name the axes or use None.");
          std::optional<NamedSharding> layout;
          outs[i] = reshard(outs[i], split_auto_axes(opts.out_shardings[i], outs[i], i, layout));
          if (layout) {
            e->out_layouts.resize(outs.size());
            e->out_layouts[i] = layout;
          }
        }
      e->prog = std::make_shared<const Program>(dce(cse(trace.finish(outs))));
    }
    std::lock_guard<std::mutex> lock(mu);
    ++traces;
    if (cache.size() > 1024) cache.clear();
    cache.emplace(std::move(key), e);
    return e;
  }

  std::shared_ptr<const Executable> exe_for(Entry& e, const std::vector<Array>& args) {
    std::vector<NamedSharding> layouts;
    for (const auto& c : e.prog->consts) {
      check_concrete(c, "jit");
      layouts.push_back(c.sharding());
    }
    for (const auto& a : args) layouts.push_back(a.sharding());
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [l, ex] : e.exes)
        if (l == layouts) return ex;
    }
    auto ex = detail::lower(*e.prog, layouts, e.out_layouts);
    std::lock_guard<std::mutex> lock(mu);
    if (e.exes.size() > 64) e.exes.clear();
    e.exes.emplace_back(std::move(layouts), ex);
    return ex;
  }
};

JitCore::JitCore(JitOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
}
JitCore::~JitCore() = default;

int JitCore::trace_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->traces;
}

std::vector<Array> JitCore::call(const std::vector<Array>& args0, const std::string& key,
                                 const Fn& fn) {
  std::vector<Array> args = impl_->apply_in_shardings(args0);
  if (current_trace()) {
    // Nested: record one equation that holds the sub-program.
    auto e = impl_->entry_for(args, key, fn);
    std::vector<Array> in = e->prog->consts;
    in.insert(in.end(), args.begin(), args.end());
    return detail::bind(std::make_shared<prim::JitCall>(
                            e->prog, impl_->opts.name, std::vector<std::optional<NamedSharding>>{}),
                        in);
  }
  for (const auto& a : args) check_concrete(a, "jit");
  auto e = impl_->entry_for(args, key, fn);
  auto ex = impl_->exe_for(*e, args);
  std::vector<Array> in = e->prog->consts;
  in.insert(in.end(), args.begin(), args.end());
  std::vector<Array> outs = ex->run(in);
  for (int i : impl_->opts.donate_argnums) {
    if (i < 0 || i >= static_cast<int>(args0.size()))
      throw ValueError("[jit] donate_argnums names leaf " + std::to_string(i) + ". Got " +
                       std::to_string(args0.size()) + " array leaves; expected indices in [0, " +
                       std::to_string(args0.size()) + ").");
    const auto& impl = args0[i].impl();
    bool returned = false;
    for (const auto& o : outs) returned = returned || o.impl() == impl;
    if (returned) continue;
    // The call's tasks hold their own references; the caller's handle is gone.
    impl->deleted = true;
    impl->buffers.clear();
  }
  return outs;
}

Lowered JitCore::lower(const std::vector<Array>& args0, const std::string& key, const Fn& fn) {
  std::vector<Array> args = impl_->apply_in_shardings(args0);
  for (const auto& a : args) check_concrete(a, "lower");
  auto e = impl_->entry_for(args, key, fn);
  auto ex = impl_->exe_for(*e, args);
  return Lowered{e->prog->str(), ex->str()};
}

}  // namespace tsr::detail
