#pragma once
/** Transformations over C++ callables of trees of Arrays. jit traces the function
 *  into a typed Program once per input signature and runs the compiled (lowered) form. */
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/array.h"
#include "tsr/tree.h"

namespace tsr {

/** What jit does with communication the program did not write (a reshard the
 *  partitioner inserts, e.g. the all-reduce after a sum over a sharded dimension). */
enum class ImplicitComm {
  Allow, /**< run it */
  Warn,  /**< run it, and print each one to stderr when the call is lowered */
  Error  /**< refuse to lower: a ShardingTypeError naming the op */
};

/** Options of jit. Arguments and results are trees (tsr/tree.h); in_shardings,
 *  out_shardings and donate are tree prefixes of the positional arguments tuple /
 *  the result: one value for everything, `{P("x"), P()}` one per argument (a
 *  sequence whose length is not the argument count is JAX's "wrong length" error),
 *  deeper by position or key. std::monostate keeps a leaf's own (or traced) sharding.
 *  A single-Array result also takes a one-entry list (`{P()}`). out_shardings may
 *  name Auto axes: the result's type keeps the Explicit part, its concrete layout
 *  the whole spec (spec §13.6). Traces nest at most 64 deep per thread (recursion
 *  through jit is a ValueError). */
struct JitOptions {
  tree::Prefix<Placement> in_shardings = {};  /**< over the arguments; monostate: keep */
  tree::Prefix<Placement> out_shardings = {}; /**< over the result; monostate: traced */
  std::vector<int> donate_argnums = {}; /**< positional arguments whose every leaf is donated */
  tree::Prefix<bool> donate = {};       /**< leaves to donate, as a prefix of the arguments */
  std::string name = "fn";              /**< printed in programs */
  /** Communication the program did not write; unset: env TSR_IMPLICIT_COMM
   *  (allow | warn | error), else Allow. */
  std::optional<ImplicitComm> implicit_comm = {};
};

/** One communication a lowered program performs (beyond JAX: what the partitioner
 *  inserted is listed next to what the program wrote). */
struct CommEvent {
  std::string kind; /**< all_reduce, all_gather, reduce_scatter, all_to_all, permute, broadcast */
  std::vector<std::string> axes; /**< the mesh axes it communicates over */
  int64_t bytes_per_device = 0;  /**< bytes of the largest block each device sends or receives */
  std::string cause;     /**< the op that asked for it: "psum", "operand 1 of dot_general" */
  bool implicit = false; /**< inserted by the partitioner, not written by the program */
  /** "all_reduce over ('x',), 4096 B per device: result of reduce_sum [implicit]". */
  std::string str() const;
};

/** Every communication of a lowered program, in execution order (loop and branch
 *  bodies included once, prefixed by where they run). */
struct CommReport {
  std::vector<CommEvent> events; /**< the communications */
  /** How many the partitioner inserted. */
  size_t implicit_count() const;
  /** One line per event. */
  std::string str() const;
};

/** The text forms of a traced and lowered call (like jit(f).lower(args)). */
struct Lowered {
  std::string program; /**< the typed Program, jaxpr style */
  std::string local;   /**< the per-device lowered program with its collectives */
  CommReport comm;     /**< every communication, with its cause */
  /** The typed Program. */
  const std::string& as_text() const { return program; }
  /** Every communication the lowered program performs (see CommReport). */
  const CommReport& comm_report() const { return comm; }
};

namespace detail {

/** The non-template core of jit: traces, caches and runs over flat leaves. */
class JitCore {
 public:
  /** A traced call's result: its leaves and their Structure. */
  struct Out {
    std::vector<Array> leaves; /**< result leaves */
    tree::Structure structure; /**< the result's tree shape and statics */
  };
  /** A non-owning reference to the function over flat argument leaves (called only
   *  while tracing, inside call/lower). */
  class Fn {
   public:
    /** Refers to c, which must outlive the call. */
    template <typename C>
    explicit Fn(C& c)
        : obj_(&c), call_([](void* o, const std::vector<Array>& l) -> Out {
            return (*static_cast<C*>(o))(l);
          }) {}
    /** Invokes it. */
    Out operator()(const std::vector<Array>& leaves) const { return call_(obj_, leaves); }

   private:
    void* obj_;
    Out (*call_)(void*, const std::vector<Array>&);
  };
  /** Options are fixed per jitted function. */
  explicit JitCore(JitOptions opts);
  ~JitCore();
  /** Calls with the argument leaves; `in` (the positional arguments' tuple Structure,
   *  statics included) is part of the cache key. */
  Out call(const std::vector<Array>& leaves, const tree::Structure& in, const Fn& fn);
  /** Traces (if needed) and lowers without running. */
  Lowered lower(const std::vector<Array>& leaves, const tree::Structure& in, const Fn& fn);
  /** How many times the function was traced. */
  int trace_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace detail

/** A jitted callable: same signature as f, over trees of Arrays. */
template <typename F>
class Jitted {
 public:
  /** Wraps f. */
  Jitted(F f, JitOptions opts)
      : f_(std::make_shared<F>(std::move(f))),
        core_(std::make_shared<detail::JitCore>(std::move(opts))) {}

  /** Traces on the first call per input signature (leaf types and the arguments'
   *  Structure with its statics), then runs the cached form. */
  template <typename... Args>
  auto operator()(const Args&... args) const {
    auto in = tree::flatten(std::forward_as_tuple(args...));
    auto body = [&](const std::vector<Array>& l) {
      return this->trace_body<Args...>(in.second, l);
    };
    auto out = core_->call(in.first, in.second, detail::JitCore::Fn(body));
    return tree::unflatten<Result<Args...>>(out.structure, out.leaves);
  }

  /** Traces and lowers for these arguments: the printed Program and local form. */
  template <typename... Args>
  Lowered lower(const Args&... args) const {
    auto in = tree::flatten(std::forward_as_tuple(args...));
    auto body = [&](const std::vector<Array>& l) {
      return this->trace_body<Args...>(in.second, l);
    };
    return core_->lower(in.first, in.second, detail::JitCore::Fn(body));
  }

  /** Number of traces so far (retracing happens only for new input signatures). */
  int trace_count() const { return core_->trace_count(); }

 private:
  template <typename... Args>
  using Result = std::decay_t<std::invoke_result_t<F&, const std::decay_t<Args>&...>>;

  // Rebuilds the arguments around the traced leaves, calls f, flattens its result.
  template <typename... Args>
  detail::JitCore::Out trace_body(const tree::Structure& in, const std::vector<Array>& l) const {
    auto args = tree::unflatten<std::tuple<std::decay_t<Args>...>>(in, l);
    auto [leaves, s] = tree::flatten(static_cast<Result<Args...>>(std::apply(*f_, args)));
    return {std::move(leaves), std::move(s)};
  }

  std::shared_ptr<F> f_;
  std::shared_ptr<detail::JitCore> core_;
};

/** jit(f): traces f with abstract inputs and runs the partitioned program. */
template <typename F>
Jitted<F> jit(F f, JitOptions opts = {}) {
  return Jitted<F>(std::move(f), std::move(opts));
}

/** The typed Program of f at these arguments (like jax.make_jaxpr), as text. */
template <typename F, typename... Args>
std::string make_jaxpr(F f, const Args&... args) {
  return jit(std::move(f)).lower(args...).program;
}

}  // namespace tsr
