// jit: trace once per input signature (types + static arguments), lower once per
// input layout, run the executable. Inside another trace a call records one
// `jit` equation holding the sub-program (nested jit).
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/runtime/caches.h"
#include "tsr/runtime/env.h"
#include "tsr/runtime/executable.h"
#include "tsr/runtime/timeline.h"
#include "tsr/transforms.h"

namespace tsr::detail {

namespace {

/** Deepest nesting of jit traces on one thread (recursion guard). */
constexpr int kMaxJitTraceDepth = 64;

bool same_type(const ArrayType& a, const ArrayType& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.weak == b.weak && a.vma == b.vma &&
         a.sharding == b.sharding;
}

struct SigKey {
  tree::Structure in;  // the arguments' tree shape and statics
  std::vector<ArrayType> types;
  std::string env;  // axis_env_key(): vmap names and check_vma, which collectives read
  size_t hash = 0;
  bool operator==(const SigKey& o) const {
    if (hash != o.hash || types.size() != o.types.size() || !(in == o.in) || env != o.env)
      return false;
    for (size_t i = 0; i < types.size(); ++i)
      if (!same_type(types[i], o.types[i])) return false;
    return true;
  }
};
// A call's signature borrowed from its arguments: a cache hit copies no types.
struct SigProbe {
  const tree::Structure* in;
  const std::vector<Array>* args;
  const std::string* env;
  size_t hash;
  /** Inside another trace: the arguments' types as it sees them (else null). */
  const std::vector<ArrayType>* seen = nullptr;
};
struct SigHash {
  using is_transparent = void;
  size_t operator()(const SigKey& k) const { return k.hash; }
  size_t operator()(const SigProbe& p) const { return p.hash; }
};
struct SigEq {
  using is_transparent = void;
  bool operator()(const SigKey& a, const SigKey& b) const { return a == b; }
  bool operator()(const SigProbe& p, const SigKey& k) const { return (*this)(k, p); }
  bool operator()(const SigKey& k, const SigProbe& p) const {
    if (k.hash != p.hash || k.types.size() != p.args->size() || !(k.in == *p.in) || k.env != *p.env)
      return false;
    for (size_t i = 0; i < k.types.size(); ++i)
      if (!same_type(k.types[i], p.seen ? (*p.seen)[i] : (*p.args)[i].type())) return false;
    return true;
  }
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
Placement split_auto_axes(const Placement& p, const Array& out, const std::string& path,
                          std::optional<NamedSharding>& layout) {
  const PartitionSpec* ps = std::get_if<PartitionSpec>(&p);
  const NamedSharding* ns = std::get_if<NamedSharding>(&p);
  if (!ps && !ns) return p;
  AbstractMesh m = ps ? get_abstract_mesh() : ns->mesh();
  const PartitionSpec& spec = ps ? *ps : ns->spec();
  bool any_auto = false, known = !m.empty();
  for (const auto& a : spec.partition_axes()) {
    any_auto = any_auto || (m.axis_index(a) >= 0 && m.axis_type(a) == AxisType::Auto);
    known = known && m.axis_index(a) >= 0;
  }
  // Without Auto axes reshard types the result; JAX checks the concrete sharding's rank
  // and shard shape first (pjit_check_aval_sharding: E21, E22), so do the same.
  if (!any_auto && !known) return p;  // reshard refuses the rest, with its texts
  NamedSharding full = ns ? *ns : NamedSharding(m, spec);
  if (ps) {
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == m) full = NamedSharding(ctx, spec);
  }
  // JAX's pjit_check_aval_sharding wording around E21 / E22.
  std::string what = "One of pjit outputs with pytree key path " + path;
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
    std::string m = inner(e);
    if (m.empty() || m.back() != '.') m += ".";
    throw IndivisibleError("[jit] " + what + " was given the sharding " + m);
  }
  if (!any_auto) return p;
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
  tree::Structure out;  // the result's tree: rebuilt on a cache hit without calling f
  std::vector<std::optional<NamedSharding>> out_layouts;  // concrete layouts of Auto axes
  std::vector<std::optional<NamedSharding>> out_given;    // out_shardings as written
  struct Lowered {
    std::vector<NamedSharding> layouts;
    std::shared_ptr<const Executable> ex;
    bool checked = false;  // implicit_comm applied (lower() skips it: it shows the report)
  };
  std::vector<Lowered> exes;
};

[[noreturn]] void throw_in_length(const std::string& name, size_t got, size_t args) {
  throw ValueError(
      "[jit] jit in_shardings specification must be a tree prefix of the positional "
      "arguments tuple. In particular, jit in_shardings must either be a Sharding, a "
      "PartitionSpec, or a tuple of length equal to the number of positional arguments. But "
      "jit in_shardings is the wrong length: got a tuple or list of length " +
      std::to_string(got) + " for an args tuple of length " + std::to_string(args) + " (jit of `" +
      name +
      "`). Give one entry per positional argument (static ones included; their entry is "
      "ignored), or one placement for all; std::monostate{} keeps an argument's own sharding.");
}

[[noreturn]] void throw_out_length(const std::string& name, size_t got, size_t results) {
  throw ValueError(
      "[jit] jit out_shardings specification must be a tree prefix of the corresponding "
      "value. Got " +
      std::to_string(got) + " out_shardings for " + std::to_string(results) +
      (results == 1 ? " result" : " results") + " of jit of `" + name +
      "`; expected one entry per element of the result (or one placement for all). Use "
      "std::monostate{} for a result that keeps its traced sharding.");
}

void check_constrained(const Placement& p, const char* which) {
  if (const auto* ps = std::get_if<PartitionSpec>(&p))
    for (const auto& e : ps->entries())
      if (e.is_unconstrained())
        throw ValueError(std::string("[jit] Unconstrained dims are not allowed when passed to ") +
                         which + ": " + ps->repr() + ". Name the axes or use None.");
}

bool is_default(const tree::Prefix<Placement>& p) {
  return p.is_value() && std::holds_alternative<std::monostate>(p.value());
}

// Every live jit object, so clear_caches() can empty their caches.
struct JitCache {
  virtual ~JitCache() = default;
  // Moves the cached entries out (the caller destroys them outside every lock).
  virtual std::vector<std::shared_ptr<Entry>> take_entries() = 0;
};
std::mutex g_jits_mu;
std::unordered_set<JitCache*>& live_jits() {
  static auto* s = new std::unordered_set<JitCache*>();  // never destroyed, like the runtime
  return *s;
}

}  // namespace

void clear_jit_caches() {
  std::vector<std::shared_ptr<Entry>> old;
  {
    std::lock_guard<std::mutex> lock(g_jits_mu);
    for (JitCache* j : live_jits()) {
      auto e = j->take_entries();
      old.insert(old.end(), std::make_move_iterator(e.begin()), std::make_move_iterator(e.end()));
    }
  }
  // `old` goes here: a program's teardown may destroy a jit object (a captured
  // callable), which takes g_jits_mu.
}

struct JitCore::Impl : JitCache {
  JitOptions opts;
  std::mutex mu;
  std::unordered_map<SigKey, std::shared_ptr<Entry>, SigHash, SigEq> cache;
  int traces = 0;
  // The last argument structure's per-leaf in_shardings and donations (most calls repeat it).
  tree::Structure last_in;
  std::shared_ptr<const std::vector<Placement>> last_in_shardings;
  std::shared_ptr<const std::vector<bool>> last_donated;

  std::vector<std::shared_ptr<Entry>> take_entries() override {
    std::vector<std::shared_ptr<Entry>> out;
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [key, e] : cache) out.push_back(std::move(e));
    cache.clear();
    return out;
  }

  std::vector<Placement> in_shardings_for(const tree::Structure& in) {
    if (const auto* p = &opts.in_shardings;
        p->is_sequence() && p->children().size() != static_cast<size_t>(in.num_children()))
      throw_in_length(opts.name, p->children().size(), static_cast<size_t>(in.num_children()));
    return tree::broadcast_prefix(opts.in_shardings, in,
                                  {.api = "jit",
                                   .what = "jit in_shardings",
                                   .of = "the positional arguments tuple",
                                   .root = "args"});
  }

  std::vector<bool> donated_for(const tree::Structure& in) {
    size_t nargs = static_cast<size_t>(in.num_children());
    std::vector<bool> out;
    if (!(opts.donate.is_value() && !opts.donate.value())) {
      if (opts.donate.is_sequence() && opts.donate.children().size() != nargs)
        throw ValueError(
            "[jit] jit donate must be a tree prefix of the positional arguments "
            "tuple. Got a sequence of " +
            std::to_string(opts.donate.children().size()) + " entries for " +
            std::to_string(nargs) + " positional arguments (jit of `" + opts.name +
            "`); expected one entry per argument or one bool for all.");
      out = tree::broadcast_prefix(opts.donate, in,
                                   {.api = "jit",
                                    .what = "jit donate",
                                    .of = "the positional arguments tuple",
                                    .root = "args"});
    }
    if (opts.donate_argnums.empty()) return out;
    out.resize(static_cast<size_t>(in.num_leaves()), false);
    std::vector<size_t> first(nargs + 1, 0);  // leaf offset of each argument
    for (size_t i = 0; i < nargs; ++i)
      first[i + 1] = first[i] + static_cast<size_t>(in.child(static_cast<int>(i)).num_leaves());
    for (int a : opts.donate_argnums) {
      if (a < 0 || static_cast<size_t>(a) >= nargs)
        throw ValueError("[jit] donate_argnums names argument " + std::to_string(a) +
                         " of jit of `" + opts.name + "`. Got " + std::to_string(nargs) +
                         " positional arguments; expected argument numbers in [0, " +
                         std::to_string(nargs) + "). Count positional arguments from 0.");
      for (size_t k = first[a]; k < first[a + 1]; ++k) out[k] = true;
    }
    return out;
  }

  // Per-leaf in_shardings and donations for this argument structure, memoised.
  std::pair<std::shared_ptr<const std::vector<Placement>>, std::shared_ptr<const std::vector<bool>>>
  per_leaf(const tree::Structure& in) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (last_in_shardings && last_in == in) return {last_in_shardings, last_donated};
    }
    auto sh = std::make_shared<const std::vector<Placement>>(
        is_default(opts.in_shardings) ? std::vector<Placement>{} : in_shardings_for(in));
    auto dn = std::make_shared<const std::vector<bool>>(donated_for(in));
    std::lock_guard<std::mutex> lock(mu);
    last_in = in;
    last_in_shardings = sh;
    last_donated = dn;
    return {sh, dn};
  }

  // The arguments placed by in_shardings: `args` itself when none applies (no copy),
  // else `placed`.
  const std::vector<Array>& apply_in_shardings(const std::vector<Array>& args,
                                               const tree::Structure& in,
                                               const std::vector<Placement>& shardings,
                                               std::vector<Array>& placed) {
    for (size_t i = 0; i < args.size(); ++i)
      if (!args[i].valid())
        throw ValueError("[jit] argument leaf " + in.paths("args")[i] +
                         " is an empty Array handle. Got a default-constructed Array; expected "
                         "an array made by an op.");
    if (shardings.empty()) return args;
    placed = args;
    for (size_t i = 0; i < placed.size(); ++i) {
      if (i < shardings.size() && !std::holds_alternative<std::monostate>(shardings[i])) {
        check_constrained(shardings[i], "in_shardings");
        placed[i] = placed[i].impl()->var ? reshard(placed[i], shardings[i])
                                          : device_put(placed[i], shardings[i]);
      }
    }
    return placed;
  }

  // Per-result out_shardings from the prefix (keeping the old per-result list forms).
  std::vector<Placement> out_shardings_for(const tree::Structure& out) {
    const tree::Prefix<Placement>& p = opts.out_shardings;
    if (p.is_sequence()) {
      size_t k = p.children().size();
      bool container = out.kind() == tree::Kind::Tuple || out.kind() == tree::Kind::List;
      if (out.kind() == tree::Kind::Leaf) {
        if (k != 1) throw_out_length(opts.name, k, 1);
        return tree::broadcast_prefix(p.children()[0], out);  // `{P()}` for one result
      }
      if (container && k != static_cast<size_t>(out.num_children()))
        throw_out_length(opts.name, k, static_cast<size_t>(out.num_children()));
    }
    return tree::broadcast_prefix(p, out,
                                  {.api = "jit",
                                   .what = "jit out_shardings",
                                   .of = "the corresponding value (the result)",
                                   .root = "result"});
  }

  std::shared_ptr<Entry> entry_for(const std::vector<Array>& args, const tree::Structure& in,
                                   const Fn& fn) {
    // Inside another trace the function is traced at the types that trace gives the
    // arguments (a constant made in a shard_map body is an invariant block there).
    std::optional<std::vector<ArrayType>> seen;
    if (current_trace()) {
      seen.emplace();
      for (const auto& a : args) seen->push_back(seen_type(a));
    }
    size_t hash = in.hash();
    std::string env = axis_env_key();
    if (!env.empty()) hash ^= std::hash<std::string>{}(env);
    for (size_t i = 0; i < args.size(); ++i) {
      const ArrayType& t = seen ? (*seen)[i] : args[i].type();
      size_t h = t.sharding.hash() * 131 + static_cast<size_t>(t.dtype) * 7 + (t.weak ? 1 : 0);
      for (int64_t d : t.shape) h = h * 1000003 + static_cast<size_t>(d);
      hash = hash * 1000003 + h;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = cache.find(SigProbe{&in, &args, &env, hash, seen ? &*seen : nullptr});
      if (it != cache.end()) return it->second;
    }
    SigKey key;
    key.in = in;
    key.env = env;
    key.hash = hash;
    for (size_t i = 0; i < args.size(); ++i)
      key.types.push_back(seen ? (*seen)[i] : args[i].type());
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
      timeline::Scope span(timeline::kCaller, "jit", "jit trace");
      if (span.recording()) span.rename("jit trace " + opts.name);
      Trace trace;
      std::vector<Array> ins;
      for (const auto& t : key.types) ins.push_back(trace.new_input(t));
      Out traced = fn(ins);
      std::vector<Array>& outs = traced.leaves;
      for (size_t i = 0; i < outs.size(); ++i)
        if (!outs[i].valid())
          throw ValueError("[jit] result leaf " + traced.structure.paths("result")[i] +
                           " of jit of `" + opts.name +
                           "` is an empty Array handle. Got a default-constructed Array; "
                           "expected an array computed by the function.");
      if (!is_default(opts.out_shardings)) {
        std::vector<Placement> outsh = out_shardings_for(traced.structure);
        std::vector<std::string> paths;
        for (size_t i = 0; i < outs.size(); ++i) {
          if (std::holds_alternative<std::monostate>(outsh[i])) continue;
          check_constrained(outsh[i], "out_shardings");
          if (paths.empty()) paths = traced.structure.paths("result");
          std::optional<NamedSharding> layout;
          outs[i] = reshard(outs[i], split_auto_axes(outsh[i], outs[i], paths[i], layout));
          if (layout) {
            e->out_layouts.resize(outs.size());
            e->out_layouts[i] = layout;
          }
          // The result's sharding shows the spec as written (JAX), not rank-normalized.
          Mesh ctx = get_mesh();
          if (auto g =
                  given_sharding(outsh[i], ctx.empty() ? NamedSharding() : NamedSharding(ctx, P()));
              g && g->concrete_mesh()) {
            e->out_given.resize(outs.size());
            e->out_given[i] = g;
          }
        }
      }
      e->out = traced.structure;
      e->prog = std::make_shared<const Program>(dce(cse(trace.finish(outs))));
    }
    std::lock_guard<std::mutex> lock(mu);
    ++traces;
    if (cache.size() > 1024) cache.clear();
    cache.emplace(std::move(key), e);
    return e;
  }

  // JitOptions::implicit_comm (else TSR_IMPLICIT_COMM): communication the program did
  // not write is refused or reported when the call is lowered.
  void check_implicit_comm(const Executable& ex) const {
    ImplicitComm mode = opts.implicit_comm ? *opts.implicit_comm : env_implicit_comm();
    if (mode == ImplicitComm::Allow) return;
    for (const auto& ev : comm_report(ex).events) {
      if (!ev.implicit) continue;
      if (mode == ImplicitComm::Warn) {
        std::cerr << "tsr: [jit] " << opts.name << ": implicit " << ev.str() << "\n";
        continue;
      }
      throw ShardingTypeError(
          "[jit] " + opts.name + ": the partitioner inserted " + ev.str() +
          ". Got communication the program does not write (implicit_comm=error); expected "
          "only reshard, out_shardings and shard_map collectives to move data. Reshard "
          "explicitly where the data should move, or set JitOptions::implicit_comm (or "
          "TSR_IMPLICIT_COMM) to warn or allow.");
    }
  }

  static ImplicitComm env_implicit_comm() {
    static const ImplicitComm mode = [] {
      std::optional<size_t> i = env_choice(
          "TSR_IMPLICIT_COMM", "jit", "what jit does with communication the program did not write",
          {"allow", "warn", "error"});
      return i ? static_cast<ImplicitComm>(*i) : ImplicitComm::Allow;
    }();
    return mode;
  }

  // `check`: apply implicit_comm (a call); lower() shows the report instead.
  std::shared_ptr<const Executable> exe_for(Entry& e, const std::vector<Array>& args,
                                            bool check = true) {
    const auto& consts = e.prog->consts;
    for (const auto& c : consts) check_concrete(c, "jit");
    // The layout of argument i, constants first (compared in place: a hit copies none).
    auto layout_of = [&](size_t i) -> const NamedSharding& {
      return i < consts.size() ? consts[i].impl()->sharding()
                               : args[i - consts.size()].impl()->sharding();
    };
    const size_t n = consts.size() + args.size();
    std::shared_ptr<const Executable> ex;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& c : e.exes) {
        bool same = c.layouts.size() == n;
        for (size_t i = 0; same && i < n; ++i) same = c.layouts[i] == layout_of(i);
        if (same) {
          if (timeline::on())
            timeline::instant(timeline::kCaller, "jit", "jit cache hit " + opts.name);
          if (!check || c.checked) return c.ex;
          ex = c.ex;
        }
      }
    }
    std::vector<NamedSharding> layouts;
    for (size_t i = 0; i < n; ++i) layouts.push_back(layout_of(i));
    if (!ex) {
      timeline::Scope span(timeline::kCaller, "jit", "jit compile");
      if (span.recording()) span.rename("jit compile " + opts.name);
      ex = detail::lower(*e.prog, layouts, e.out_layouts);
      if (span.recording())
        span.set_args("\"steps\":" + std::to_string(ex->steps.size()) +
                      ",\"devices\":" + std::to_string(ex->devs.size()));
    }
    if (check) check_implicit_comm(*ex);
    std::lock_guard<std::mutex> lock(mu);
    for (auto& c : e.exes)
      if (c.ex == ex) {
        c.checked = c.checked || check;
        return ex;
      }
    if (e.exes.size() > 64) e.exes.clear();
    e.exes.push_back({std::move(layouts), ex, check});
    return ex;
  }
};

JitCore::JitCore(JitOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  std::lock_guard<std::mutex> lock(g_jits_mu);
  live_jits().insert(impl_.get());
}
JitCore::~JitCore() {
  std::lock_guard<std::mutex> lock(g_jits_mu);
  live_jits().erase(impl_.get());
}

int JitCore::trace_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->traces;
}

JitCore::Out JitCore::call(const std::vector<Array>& args0, const tree::Structure& in,
                           const Fn& fn) {
  auto [shardings, donated] = impl_->per_leaf(in);
  std::vector<Array> placed;
  const std::vector<Array>& args = impl_->apply_in_shardings(args0, in, *shardings, placed);
  if (current_trace()) {
    // Nested: record one equation that holds the sub-program.
    auto e = impl_->entry_for(args, in, fn);
    std::vector<Array> ins = e->prog->consts;
    ins.insert(ins.end(), args.begin(), args.end());
    return {
        detail::bind(std::make_shared<prim::JitCall>(e->prog, impl_->opts.name,
                                                     std::vector<std::optional<NamedSharding>>{}),
                     ins),
        e->out};
  }
  for (const auto& a : args) check_concrete(a, "jit");
  timeline::Scope span(timeline::kCaller, "jit", "jit call");
  if (span.recording()) span.rename("jit " + impl_->opts.name);
  auto e = impl_->entry_for(args, in, fn);
  if (detail::Runtime::get().process_count() > 1) {
    const Mesh* named = detail::mesh_named_by(*e->prog);
    std::vector<Array> moved = args;
    if (detail::place_process_local(moved, named)) {
      Out r = call(moved, in, fn);
      // A result that is a placed argument is given back as the caller passed it.
      for (auto& leaf : r.leaves)
        for (size_t i = 0; i < args.size(); ++i)
          if (leaf.impl() == moved[i].impl() && moved[i].impl() != args[i].impl()) leaf = args[i];
      return r;
    }
    // Captured process-local constants go on the program's mesh the same way, once.
    std::vector<Array> cs = e->prog->consts;
    cs.insert(cs.end(), args.begin(), args.end());
    if (!e->prog->consts.empty() && detail::place_process_local(cs, named)) {
      auto placed = std::make_shared<Program>(*e->prog);
      placed->consts.assign(cs.begin(), cs.begin() + static_cast<long>(placed->consts.size()));
      std::lock_guard<std::mutex> lock(impl_->mu);
      e->prog = placed;
    }
  }
  auto ex = impl_->exe_for(*e, args);
  std::vector<Array> with_consts;
  if (!e->prog->consts.empty()) {
    with_consts = e->prog->consts;
    with_consts.insert(with_consts.end(), args.begin(), args.end());
  }
  std::vector<Array> outs = ex->run(e->prog->consts.empty() ? args : with_consts);
  for (size_t i = 0; i < e->out_given.size(); ++i)
    if (e->out_given[i]) outs[i] = with_given_sharding(outs[i], *e->out_given[i]);
  for (size_t i = 0; i < donated->size() && i < args0.size(); ++i) {
    if (!(*donated)[i]) continue;
    const auto& impl = args0[i].impl();
    bool returned = false;
    for (const auto& o : outs) returned = returned || o.impl() == impl;
    if (returned) continue;
    // The call's tasks hold their own references; the caller's handle is gone.
    impl->deleted = true;
    impl->buffers.clear();
  }
  return {std::move(outs), e->out};
}

Lowered JitCore::lower(const std::vector<Array>& args0, const tree::Structure& in, const Fn& fn) {
  auto shardings = impl_->per_leaf(in).first;
  std::vector<Array> placed;
  const std::vector<Array>& args = impl_->apply_in_shardings(args0, in, *shardings, placed);
  for (const auto& a : args) check_concrete(a, "lower");
  auto e = impl_->entry_for(args, in, fn);
  auto ex = impl_->exe_for(*e, args, false);
  return Lowered{e->prog->str(), ex->str(), comm_report(*ex)};
}

}  // namespace tsr::detail
