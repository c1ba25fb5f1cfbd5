#pragma once
/** Transformations over C++ callables of Arrays. jit traces the function into a
 *  typed Program once per input signature and runs the compiled (lowered) form. */
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tsr/array.h"

namespace tsr {

/** Options of jit. Indices count Array leaves of the arguments, left to right
 *  (a std::vector<Array> argument contributes one leaf per element). A non-empty
 *  in_shardings / out_shardings needs exactly one entry per leaf / result (ValueError
 *  naming both counts). out_shardings may name Auto axes: the result's type keeps
 *  the Explicit part, its concrete layout the whole spec (spec §13.6). Traces nest at
 *  most 64 deep per thread (recursion through jit is a ValueError). */
struct JitOptions {
  std::vector<Placement> in_shardings = {};  /**< per leaf; monostate: keep the argument's */
  std::vector<Placement> out_shardings = {}; /**< per output; monostate: the traced type's */
  std::vector<int> donate_argnums = {};      /**< leaves whose buffers the call may consume */
  std::string name = "fn";                   /**< printed in programs */
};

/** The text forms of a traced and lowered call (like jit(f).lower(args)). */
struct Lowered {
  std::string program; /**< the typed Program, jaxpr style */
  std::string local;   /**< the per-device lowered program with its collectives */
  /** The typed Program. */
  const std::string& as_text() const { return program; }
};

namespace detail {

/** The non-template core of jit: traces, caches and runs. */
class JitCore {
 public:
  /** A non-owning reference to the function over flat leaves (called only while
   *  tracing, inside call/lower). */
  class Fn {
   public:
    /** Refers to c, which must outlive the call. */
    template <typename C>
    explicit Fn(C& c)
        : obj_(&c),
          call_([](void* o, const std::vector<Array>& l) { return (*static_cast<C*>(o))(l); }) {}
    /** Invokes it. */
    std::vector<Array> operator()(const std::vector<Array>& leaves) const {
      return call_(obj_, leaves);
    }

   private:
    void* obj_;
    std::vector<Array> (*call_)(void*, const std::vector<Array>&);
  };
  /** Options are fixed per jitted function. */
  explicit JitCore(JitOptions opts);
  ~JitCore();
  /** Calls with flat leaves; `key` encodes static arguments and the tree shape. */
  std::vector<Array> call(const std::vector<Array>& args, const std::string& key, const Fn& fn);
  /** Traces (if needed) and lowers without running. */
  Lowered lower(const std::vector<Array>& args, const std::string& key, const Fn& fn);
  /** How many times the function was traced. */
  int trace_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** Leaves of an argument: Array, std::vector<Array>; anything else is static. */
inline void flatten_arg(const Array& a, std::vector<Array>& out, std::string& key) {
  out.push_back(a);
  key += "A;";
}
inline void flatten_arg(const std::vector<Array>& a, std::vector<Array>& out, std::string& key) {
  out.insert(out.end(), a.begin(), a.end());
  key += "V" + std::to_string(a.size()) + ";";
}
template <typename T>
void flatten_arg(const T& v, std::vector<Array>&, std::string& key) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string> || std::is_enum_v<T>,
                "jit arguments must be Array, std::vector<Array>, or static scalars/strings");
  if constexpr (std::is_same_v<T, std::string>)
    key += "S" + v + ";";
  else if constexpr (std::is_enum_v<T>)
    key += "E" + std::to_string(static_cast<long long>(v)) + ";";
  else
    key += "N" + std::to_string(v) + ";";
}

template <typename T>
T unflatten_arg(const T& orig, const std::vector<Array>& leaves, size_t& k) {
  if constexpr (std::is_same_v<T, Array>) {
    return leaves[k++];
  } else if constexpr (std::is_same_v<T, std::vector<Array>>) {
    std::vector<Array> v(leaves.begin() + static_cast<long>(k),
                         leaves.begin() + static_cast<long>(k + orig.size()));
    k += orig.size();
    return v;
  } else {
    return orig;
  }
}

inline std::vector<Array> flatten_result(const Array& a) { return {a}; }
inline std::vector<Array> flatten_result(const std::vector<Array>& a) { return a; }
template <typename... Ts>
std::vector<Array> flatten_result(const std::tuple<Ts...>& t) {
  std::vector<Array> out;
  std::apply([&](const auto&... x) { (out.push_back(x), ...); }, t);
  return out;
}
template <typename A, typename B>
std::vector<Array> flatten_result(const std::pair<A, B>& p) {
  return {p.first, p.second};
}

template <typename R>
struct Unflatten;
template <>
struct Unflatten<Array> {
  static Array get(const std::vector<Array>& v) { return v.at(0); }
};
template <>
struct Unflatten<std::vector<Array>> {
  static std::vector<Array> get(const std::vector<Array>& v) { return v; }
};
template <typename... Ts>
struct Unflatten<std::tuple<Ts...>> {
  static std::tuple<Ts...> get(const std::vector<Array>& v) {
    return get_impl(v, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> get_impl(const std::vector<Array>& v, std::index_sequence<I...>) {
    return std::tuple<Ts...>{v.at(I)...};
  }
};
template <typename A, typename B>
struct Unflatten<std::pair<A, B>> {
  static std::pair<A, B> get(const std::vector<Array>& v) { return {v.at(0), v.at(1)}; }
};

}  // namespace detail

/** A jitted callable: same signature as f. */
template <typename F>
class Jitted {
 public:
  /** Wraps f. */
  Jitted(F f, JitOptions opts)
      : f_(std::make_shared<F>(std::move(f))),
        core_(std::make_shared<detail::JitCore>(std::move(opts))) {}

  /** Traces on the first call per input signature, then runs the cached form. */
  template <typename... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
    std::vector<Array> flat;
    std::string key;
    (detail::flatten_arg(args, flat, key), ...);
    auto body = [&](const std::vector<Array>& leaves) {
      return this->trace_body<R>(leaves, args...);
    };
    return detail::Unflatten<R>::get(core_->call(flat, key, detail::JitCore::Fn(body)));
  }

  /** Traces and lowers for these arguments: the printed Program and local form. */
  template <typename... Args>
  Lowered lower(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
    std::vector<Array> flat;
    std::string key;
    (detail::flatten_arg(args, flat, key), ...);
    auto body = [&](const std::vector<Array>& leaves) {
      return this->trace_body<R>(leaves, args...);
    };
    return core_->lower(flat, key, detail::JitCore::Fn(body));
  }

  /** Number of traces so far (retracing happens only for new input types). */
  int trace_count() const { return core_->trace_count(); }

 private:
  template <typename R, typename... Args>
  std::vector<Array> trace_body(const std::vector<Array>& leaves, const Args&... args) const {
    size_t k = 0;
    // Braced init evaluates left to right, so leaves are consumed in order.
    std::tuple<Args...> rebuilt{detail::unflatten_arg(args, leaves, k)...};
    return detail::flatten_result(static_cast<R>(std::apply(*f_, rebuilt)));
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
