#pragma once
/** Trees (JAX's pytrees): nested containers whose leaves are Arrays. Every transform
 *  takes and returns trees; this header flattens them into leaves plus a Structure
 *  (the treedef) and rebuilds them.
 *
 *  Nodes: std::vector<T>, std::array<T, N>, std::tuple<...>, std::pair<A, B>,
 *  std::map<std::string, T>, std::optional<T>, structs declared with TSR_TREE, and
 *  containers with a NodeTraits specialization. Leaves: tsr::Array. Anything else
 *  (int, double, bool, std::string, enums, std::function, a std::vector<int>, any
 *  copyable type) is *static*: not a leaf, kept in the Structure, restored by
 *  unflatten, and part of jit's cache key. A standard container whose elements can
 *  hold no Array (std::vector<int>) is one static value, not a node.
 *
 *  Static equality (the cache key): arithmetic types, enums, std::string and
 *  const char* compare by value (NaN equals NaN); std::function by its target's type,
 *  plus the pointer when the target is a plain function pointer of the same
 *  signature (two lambdas of one closure type compare equal whatever they capture);
 *  other types by operator== when they have one, else every value of the type is
 *  equal (compared by type name).
 *
 *  Your own container: specialize NodeTraits in namespace tsr::tree (or as
 *  `template <> struct tsr::tree::NodeTraits<MyPair>` at global scope):
 *
 *    template <> struct tsr::tree::NodeTraits<MyPair> {
 *      static constexpr const char* name = "MyPair";
 *      // Any tree, returned by value; statics in it (here `tag`) become aux data.
 *      static auto children(const MyPair& p) { return std::make_tuple(p.a, p.b, p.tag); }
 *      static MyPair from_children(std::tuple<Array, Array, int> c) {
 *        return MyPair{std::get<0>(c), std::get<1>(c), std::get<2>(c)};
 *      }
 *    };
 *
 *  The node prints as `MyPair(*, *, <static 3>)` and is transparent in paths
 *  (`x[0]`). TSR_TREE must follow the struct's definition before any use. */
#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "tsr/array.h"

namespace tsr::tree {

/** The kind of a Structure node. */
enum class Kind {
  Leaf,   /**< an Array: prints `*` */
  Static, /**< a non-Array value kept in the structure: `<static 3>` */
  Tuple,  /**< std::tuple / std::pair: `(*, *)` */
  List,   /**< std::vector / std::array: `[*, *]` */
  Dict,   /**< std::map<std::string, T>, by key order: `{'a': *}` */
  Some,   /**< a present std::optional: `Some(*)` */
  None,   /**< an empty std::optional: `None` */
  Struct, /**< a TSR_TREE struct: `Mlp{w=*, act=<static>}` */
  Custom  /**< a NodeTraits container: `Name(*, *)` */
};

namespace detail {

/** A static (non-Array) value held type-erased inside a Structure. */
class StaticValue {
 public:
  /** Virtual for the typed holder. */
  virtual ~StaticValue() = default;
  /** The held type. */
  virtual const std::type_info& type() const = 0;
  /** The held value (a `const T*` for type() == typeid(T)). */
  virtual const void* get() const = 0;
  /** Cache-key equality with a holder of the same type (see the header comment). */
  virtual bool equals(const StaticValue& o) const = 0;
  /** Consistent with equals. */
  virtual size_t hash() const = 0;
  /** The value as text for printable types ("3", "'relu'", "Act(1)"), else "". */
  virtual std::string repr() const = 0;
};

class Builder;  // below
class Reader;   // below

}  // namespace detail

/** Where two structures first differ (Structure::difference). */
struct Difference {
  std::string path;   /**< key path of the differing node ("" is the root) */
  std::string ours;   /**< that node in the structure asked */
  std::string theirs; /**< that node in the other structure */
};

/** A tree's shape without its leaves (JAX's treedef): node kinds, container sizes, map
 *  keys, optional presence, struct names and field names, and static values. A
 *  cheap shared value: copies share the nodes. */
class Structure {
 public:
  /** A single leaf (`*`). */
  Structure();
  /** The shape as text: `Mlp{w1=*, b1=*, act=<static>}`, `(*, [*, *])`, `{'a': *}`. */
  std::string str() const;
  /** Same nodes, sizes, keys, names and (by cache-key equality) static values. */
  bool operator==(const Structure& o) const;
  /** Hash consistent with operator==. */
  size_t hash() const;
  /** Number of Array leaves. */
  int num_leaves() const;
  /** The root node's kind. */
  Kind kind() const;
  /** Number of children of the root (0 for leaves, statics and None). */
  int num_children() const;
  /** The i-th child of the root as a Structure (shares nodes). */
  Structure child(int i) const;
  /** Map keys (Dict) or field names (Struct) of the root; empty otherwise. */
  const std::vector<std::string>& keys() const;
  /** The struct or custom node's type name; empty otherwise. */
  const std::string& name() const;
  /** The root's static value (Kind::Static), else nullptr. */
  const detail::StaticValue* static_value() const;
  /** One key path per leaf, depth first: "params.layers[2].w", "[0]", "['key']". */
  std::vector<std::string> paths(const std::string& root = "") const;
  /** The first node (depth first) where this and `o` differ, or nullopt when equal;
   *  static values count only when `compare_statics`. */
  std::optional<Difference> difference(const Structure& o, bool compare_statics = true,
                                       const std::string& root = "") const;
  /** A tuple node over these children (e.g. the positional arguments of a call). */
  static Structure tuple(const std::vector<Structure>& children);

  /** A node of the structure (defined in tree.cpp). */
  struct Node;
  /** Wraps a node (internal). */
  explicit Structure(std::shared_ptr<const Node> root);
  /** The root node (internal). */
  const Node& node() const { return *root_; }

 private:
  std::shared_ptr<const Node> root_;
};
/** Prints Structure::str(). */
std::ostream& operator<<(std::ostream& os, const Structure& s);

/** Specialize to make your own container a tree node (see the header comment). The
 *  primary template marks a type as "not a custom node". */
template <class T>
struct NodeTraits {
  /** Internal marker: no specialization. */
  static constexpr bool unspecialized_ = true;
};

namespace detail {

/** Hook type for TSR_TREE's ADL lookup. */
template <class T>
struct Tag {};

/** One struct field declared with TSR_TREE. */
template <class S, class M>
struct Field {
  using type = M;   /**< the field's type */
  const char* name; /**< the field's name */
  M S::*ptr;        /**< pointer to the member */
};
/** Everything TSR_TREE records about a struct. */
template <class S, class... M>
struct StructInfo {
  const char* name;                  /**< the struct's name */
  std::tuple<Field<S, M>...> fields; /**< the fields, in declaration order */
};
/** Builds a Field (used by TSR_TREE). */
template <class S, class M>
constexpr Field<S, M> field(const char* name, M S::*ptr) {
  return {name, ptr};
}
/** Builds a StructInfo (used by TSR_TREE). */
template <class S, class... M>
constexpr StructInfo<S, M...> struct_info(const char* name, Field<S, M>... fields) {
  return {name, {fields...}};
}

/** A struct declared with TSR_TREE. */
template <class T>
concept TreeStruct = requires {
  tsr_tree_describe(Tag<T>{});
};
/** A type with a NodeTraits specialization. */
template <class T>
concept CustomNode = !requires {
  NodeTraits<T>::unspecialized_;
};

/** Whether values of type T can hold Array leaves (decided on the type alone). */
template <class T>
struct HoldsLeaves : std::bool_constant<TreeStruct<T> || CustomNode<T>> {};
template <>
struct HoldsLeaves<Array> : std::true_type {};
template <class E, class A>
struct HoldsLeaves<std::vector<E, A>> : HoldsLeaves<std::remove_cv_t<E>> {};
template <class E, size_t N>
struct HoldsLeaves<std::array<E, N>> : HoldsLeaves<std::remove_cv_t<E>> {};
template <class... Ts>
struct HoldsLeaves<std::tuple<Ts...>>
    : std::bool_constant<(HoldsLeaves<std::remove_cvref_t<Ts>>::value || ...)> {};
template <class A, class B>
struct HoldsLeaves<std::pair<A, B>>
    : std::bool_constant<HoldsLeaves<std::remove_cvref_t<A>>::value ||
                         HoldsLeaves<std::remove_cvref_t<B>>::value> {};
template <class V, class C, class A>
struct HoldsLeaves<std::map<std::string, V, C, A>> : HoldsLeaves<std::remove_cv_t<V>> {};
template <class E>
struct HoldsLeaves<std::optional<E>> : HoldsLeaves<std::remove_cv_t<E>> {};

/** Recognisers of the standard node types. */
template <class T>
struct IsVector : std::false_type {};
template <class E, class A>
struct IsVector<std::vector<E, A>> : std::true_type {};
template <class T>
struct IsStdArray : std::false_type {};
template <class E, size_t N>
struct IsStdArray<std::array<E, N>> : std::true_type {};
template <class T>
struct IsTuple : std::false_type {};
template <class... Ts>
struct IsTuple<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct IsTuple<std::pair<A, B>> : std::true_type {};
template <class T>
struct IsStringMap : std::false_type {};
template <class V, class C, class A>
struct IsStringMap<std::map<std::string, V, C, A>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class E>
struct IsOptional<std::optional<E>> : std::true_type {};
template <class T>
struct IsFunction : std::false_type {};
template <class R, class... A>
struct IsFunction<std::function<R(A...)>> : std::true_type {
  using Pointer = R (*)(A...);
};

/** T has an operator== that returns something convertible to bool. */
template <class T>
concept HasEquality = requires(const T& a) {
  { a == a } -> std::convertible_to<bool>;
};
/** operator== that compiles all the way down: std::vector<std::function<...>>
 *  declares an operator== that fails only when instantiated. */
template <class T>
struct EqComparable : std::bool_constant<HasEquality<T>> {};
template <class E, class A>
struct EqComparable<std::vector<E, A>> : EqComparable<E> {};
template <class E, size_t N>
struct EqComparable<std::array<E, N>> : EqComparable<E> {};
template <class E>
struct EqComparable<std::optional<E>> : EqComparable<E> {};
template <class A, class B>
struct EqComparable<std::pair<A, B>>
    : std::bool_constant<EqComparable<A>::value && EqComparable<B>::value> {};
template <class... Ts>
struct EqComparable<std::tuple<Ts...>> : std::bool_constant<(EqComparable<Ts>::value && ...)> {};
template <class K, class V, class C, class A>
struct EqComparable<std::map<K, V, C, A>>
    : std::bool_constant<EqComparable<K>::value && EqComparable<V>::value> {};

/** Demangled C++ name of a type (for messages and enum statics). */
std::string type_name(const std::type_info& t);
/** "Act(1)": an enum's unqualified type name and value. */
std::string enum_repr(const std::type_info& t, long long v);
/** Shortest round-trip text of a double. */
std::string repr_double(double v);

/** The typed holder of one static value. */
template <class T>
class StaticOf final : public StaticValue {
 public:
  /** Copies v. */
  explicit StaticOf(T v) : v_(std::move(v)) {}
  /** typeid(T). */
  const std::type_info& type() const override { return typeid(T); }
  /** The held value. */
  const void* get() const override { return &v_; }
  /** Cache-key equality (see the header comment). */
  bool equals(const StaticValue& o) const override {
    const T& b = *static_cast<const T*>(o.get());
    if constexpr (std::is_floating_point_v<T>) {
      return v_ == b || (v_ != v_ && b != b);  // NaN keys must hit the cache
    } else if constexpr (std::is_same_v<T, const char*>) {
      return std::string_view(v_ ? v_ : "") == std::string_view(b ? b : "");
    } else if constexpr (IsFunction<T>::value) {
      if (static_cast<bool>(v_) != static_cast<bool>(b)) return false;
      if (!v_) return true;
      if (v_.target_type() != b.target_type()) return false;
      using Ptr = typename IsFunction<T>::Pointer;
      const Ptr* p = v_.template target<Ptr>();
      return !p || *p == *b.template target<Ptr>();
    } else if constexpr (EqComparable<T>::value) {
      return static_cast<bool>(v_ == b);
    } else {
      return true;  // same type (checked by the caller), no operator==
    }
  }
  /** Consistent with equals. */
  size_t hash() const override {
    if constexpr (std::is_floating_point_v<T>) {
      return v_ != v_ ? 0x7ff8u : std::hash<T>()(v_);
    } else if constexpr (std::is_same_v<T, const char*>) {
      return std::hash<std::string_view>()(v_ ? v_ : "");
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> ||
                         std::is_same_v<T, std::string>) {
      return std::hash<T>()(v_);
    } else if constexpr (IsFunction<T>::value) {
      return v_ ? v_.target_type().hash_code() : 0;
    } else {
      return typeid(T).hash_code();
    }
  }
  /** The printed value, or "" when T is not printable. */
  std::string repr() const override {
    if constexpr (std::is_same_v<T, bool>) {
      return v_ ? "true" : "false";
    } else if constexpr (std::is_floating_point_v<T>) {
      return repr_double(static_cast<double>(v_));
    } else if constexpr (std::is_arithmetic_v<T>) {
      return std::to_string(v_);
    } else if constexpr (std::is_enum_v<T>) {
      return enum_repr(typeid(T), static_cast<long long>(v_));
    } else if constexpr (std::is_same_v<T, std::string>) {
      return "'" + v_ + "'";
    } else if constexpr (std::is_same_v<T, const char*>) {
      return "'" + std::string(v_ ? v_ : "") + "'";
    } else {
      return "";
    }
  }

 private:
  T v_;
};

/** Collects leaves and/or builds a Structure while a tree is walked (non-template). */
class Builder {
 public:
  /** Builds what is asked for: the Structure, the leaves, or both. */
  Builder(bool want_structure, bool want_leaves);
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;
  /** Whether statics need to be recorded. */
  bool wants_structure() const { return want_structure_; }
  /** An Array leaf. */
  void leaf(const Array& a);
  /** A static value (call only when wants_structure()). */
  void static_value(std::shared_ptr<const StaticValue> v);
  /** An empty optional. */
  void none();
  /** Opens a node of `n` children (`name`: struct / custom type name). */
  void open(Kind k, size_t n, const char* name = "");
  /** Names the next child of the open Dict or Struct node. */
  void key(std::string_view k);
  /** Closes the open node. */
  void close();
  /** The collected leaves. */
  std::vector<Array> take_leaves() { return std::move(leaves_); }
  /** The built structure. */
  Structure take_structure();

 private:
  struct Impl;
  bool want_structure_, want_leaves_;
  std::vector<Array> leaves_;
  std::unique_ptr<Impl> impl_;
};

/** Walks a Structure while a tree is rebuilt, checking that it describes the type
 *  (non-template; errors name the key path). */
class Reader {
 public:
  /** Reads `s` with these leaves; ValueError when the counts differ. */
  Reader(const Structure& s, const std::vector<Array>& leaves);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  /** The next leaf. */
  Array leaf();
  /** The next node's static value, which must hold `t` (`what` names the type). */
  const void* static_value(const std::type_info& t);
  /** Enters the next node, which must be of kind k (and name / size when given);
   *  returns its number of children. `what` names the C++ type for errors. */
  size_t open(Kind k, const char* what, const char* name = nullptr, long size = -1);
  /** Key i of the open Dict node. */
  const std::string& key(size_t i) const;
  /** Checks that the open Struct's next field is `name`. */
  void field(const char* name);
  /** Enters the next node if it is Some (true), consumes it if None (false). */
  bool some(const char* what);
  /** Leaves the open node. */
  void close();
  /** Checks that everything was read. */
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** Makes the holder of a static value; char arrays decay to const char*. */
template <class T>
std::shared_ptr<const StaticValue> make_static(const T& v) {
  using D = std::decay_t<T>;
  return std::make_shared<StaticOf<D>>(D(v));
}

/** A standard-library-like range (value_type and begin()). */
template <class T>
concept Range = requires(const T& t) {
  typename T::value_type;
  t.begin();
};
/** Types that hold Arrays but are not nodes: flattening them as one static would hide
 *  their Arrays from every transform, so they are a compile error instead. */
template <class T>
struct Unsupported : std::false_type {};
/** A range whose elements can hold Arrays (std::map<int, Array>, std::list<Array>). */
template <class T>
requires Range<T>
struct Unsupported<T> : HoldsLeaves<std::remove_cvref_t<typename T::value_type>> {
};
template <class... Ts>
struct Unsupported<std::variant<Ts...>>
    : std::bool_constant<(HoldsLeaves<std::remove_cvref_t<Ts>>::value || ...)> {};
template <class E>
struct Unsupported<std::shared_ptr<E>> : HoldsLeaves<std::remove_cv_t<E>> {};
template <class E, class D>
struct Unsupported<std::unique_ptr<E, D>> : HoldsLeaves<std::remove_cv_t<E>> {};
template <class T>
inline constexpr bool holds_leaves_v = HoldsLeaves<std::remove_cvref_t<T>>::value;

/** Walks t depth first into the builder. */
template <class T>
void flatten_into(Builder& b, const T& t) {
  if constexpr (std::is_same_v<T, Array>) {
    b.leaf(t);
  } else if constexpr (TreeStruct<T>) {
    constexpr auto info = tsr_tree_describe(Tag<T>{});
    b.open(Kind::Struct, std::tuple_size_v<decltype(info.fields)>, info.name);
    std::apply([&](const auto&... f) { ((b.key(f.name), flatten_into(b, t.*(f.ptr))), ...); },
               info.fields);
    b.close();
  } else if constexpr (CustomNode<T>) {
    b.open(Kind::Custom, 1, NodeTraits<T>::name);
    flatten_into(b, NodeTraits<T>::children(t));
    b.close();
  } else if constexpr (!holds_leaves_v<T>) {
    static_assert(!Unsupported<T>::value,
                  "[tree] this container holds Arrays but is not a tree node. Use std::vector, "
                  "std::array, std::tuple, std::pair, std::map<std::string, T>, std::optional, "
                  "a TSR_TREE struct, or specialize tsr::tree::NodeTraits for it.");
    if (b.wants_structure()) b.static_value(make_static(t));
  } else if constexpr (IsVector<T>::value || IsStdArray<T>::value) {
    b.open(Kind::List, t.size());
    for (const auto& e : t) flatten_into(b, e);
    b.close();
  } else if constexpr (IsTuple<T>::value) {
    b.open(Kind::Tuple, std::tuple_size_v<T>);
    std::apply([&](const auto&... e) { (flatten_into(b, e), ...); }, t);
    b.close();
  } else if constexpr (IsStringMap<T>::value) {
    b.open(Kind::Dict, t.size());
    for (const auto& [k, v] : t) {
      b.key(k);
      flatten_into(b, v);
    }
    b.close();
  } else {
    static_assert(IsOptional<T>::value, "unhandled tree node type");
    if (!t) {
      b.none();
    } else {
      b.open(Kind::Some, 1);
      flatten_into(b, *t);
      b.close();
    }
  }
}

/** Rebuilds a T from the reader. */
template <class T>
T unflatten_from(Reader& r);

/** Rebuilds a std::array element by element. */
template <class A, size_t... I>
A unflatten_array(Reader& r, std::index_sequence<I...>) {
  // Braced initialisation evaluates left to right: leaves are read in order.
  return A{(static_cast<void>(I), unflatten_from<typename A::value_type>(r))...};
}
/** Rebuilds a std::tuple element by element. */
template <class T, class... Ts>
T unflatten_tuple(Reader& r, std::type_identity<std::tuple<Ts...>>) {
  return T{unflatten_from<std::remove_cvref_t<Ts>>(r)...};
}
/** Rebuilds a std::pair. */
template <class T, class A, class B>
T unflatten_tuple(Reader& r, std::type_identity<std::pair<A, B>>) {
  return T{unflatten_from<std::remove_cvref_t<A>>(r), unflatten_from<std::remove_cvref_t<B>>(r)};
}

/** Rebuilds a T from the reader. */
template <class T>
T unflatten_from(Reader& r) {
  if constexpr (std::is_same_v<T, Array>) {
    return r.leaf();
  } else if constexpr (TreeStruct<T>) {
    constexpr auto info = tsr_tree_describe(Tag<T>{});
    r.open(Kind::Struct, info.name, info.name,
           static_cast<long>(std::tuple_size_v<decltype(info.fields)>));
    T s{};
    std::apply(
        [&](const auto&... f) {
          ((r.field(f.name),
            s.*(f.ptr) = unflatten_from<typename std::decay_t<decltype(f)>::type>(r)),
           ...);
        },
        info.fields);
    r.close();
    return s;
  } else if constexpr (CustomNode<T>) {
    using C = std::decay_t<decltype(NodeTraits<T>::children(std::declval<const T&>()))>;
    r.open(Kind::Custom, NodeTraits<T>::name, NodeTraits<T>::name, 1);
    T v = NodeTraits<T>::from_children(unflatten_from<C>(r));
    r.close();
    return v;
  } else if constexpr (!holds_leaves_v<T>) {
    return T(*static_cast<const T*>(r.static_value(typeid(T))));
  } else if constexpr (IsVector<T>::value) {
    size_t n = r.open(Kind::List, "std::vector");
    T v;
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(unflatten_from<typename T::value_type>(r));
    r.close();
    return v;
  } else if constexpr (IsStdArray<T>::value) {
    r.open(Kind::List, "std::array", nullptr, static_cast<long>(std::tuple_size_v<T>));
    T v = unflatten_array<T>(r, std::make_index_sequence<std::tuple_size_v<T>>{});
    r.close();
    return v;
  } else if constexpr (IsTuple<T>::value) {
    r.open(Kind::Tuple, "std::tuple", nullptr, static_cast<long>(std::tuple_size_v<T>));
    T v = unflatten_tuple<T>(r, std::type_identity<T>{});
    r.close();
    return v;
  } else if constexpr (IsStringMap<T>::value) {
    size_t n = r.open(Kind::Dict, "std::map");
    T m;
    for (size_t i = 0; i < n; ++i) {
      std::string k = r.key(i);
      m.emplace(std::move(k), unflatten_from<typename T::mapped_type>(r));
    }
    r.close();
    return m;
  } else {
    static_assert(IsOptional<T>::value, "unhandled tree node type");
    if (!r.some("std::optional")) return T{};
    T v{unflatten_from<typename T::value_type>(r)};
    r.close();
    return v;
  }
}

}  // namespace detail

/** True when T is a tree node or an Array (it can hold leaves); other types are
 *  static values. */
template <class T>
inline constexpr bool is_tree_v = detail::holds_leaves_v<T>;

/** The Array leaves of t, depth first (struct fields in declaration order, maps by key
 *  order). */
template <class T>
std::vector<Array> leaves(const T& t) {
  detail::Builder b(false, true);
  detail::flatten_into(b, t);
  return b.take_leaves();
}

/** The Structure of t (statics included). */
template <class T>
Structure structure(const T& t) {
  detail::Builder b(true, false);
  detail::flatten_into(b, t);
  return b.take_structure();
}

/** The leaves and the Structure of t. */
template <class T>
std::pair<std::vector<Array>, Structure> flatten(const T& t) {
  detail::Builder b(true, true);
  detail::flatten_into(b, t);
  Structure s = b.take_structure();
  return {b.take_leaves(), std::move(s)};
}

/** Rebuilds a T from a Structure and leaves (statics restored from s); ValueError
 *  when s does not describe a T or the leaf count differs. */
template <class T>
T unflatten(const Structure& s, const std::vector<Array>& leaves) {
  detail::Reader r(s, leaves);
  T v = detail::unflatten_from<T>(r);
  r.finish();
  return v;
}

/** One key path per leaf of t: "params.layers[2].w", "[0]", "['key']". */
template <class T>
std::vector<std::string> paths(const T& t, const std::string& root = "") {
  return structure(t).paths(root);
}

/** f(const Array&) -> Array applied to every leaf; statics and structure kept. */
template <class T, class F>
T map(F&& f, const T& t) {
  auto [l, s] = tree::flatten(t);
  for (Array& x : l) x = f(static_cast<const Array&>(x));
  return unflatten<T>(s, l);
}

/** f(const std::string& path, const Array&) -> Array applied to every leaf. */
template <class T, class F>
T map_with_path(F&& f, const T& t) {
  auto [l, s] = tree::flatten(t);
  std::vector<std::string> p = s.paths();
  for (size_t i = 0; i < l.size(); ++i) l[i] = f(static_cast<const std::string&>(p[i]), l[i]);
  return unflatten<T>(s, l);
}

namespace detail {
/** Raises the ValueError of map2 over trees of different structure. */
void check_same_layout(const Structure& a, const Structure& b, const char* api);
}  // namespace detail

/** f(const Array&, const Array&) -> Array over two trees of equal structure (static
 *  values may differ; the result keeps a's). ValueError naming the first differing
 *  path otherwise. */
template <class T, class U, class F>
T map2(F&& f, const T& a, const U& b) {
  // Qualified: for a bare Array, ADL would also find tsr::flatten (ops.h).
  auto [la, sa] = tree::flatten(a);
  auto [lb, sb] = tree::flatten(b);
  detail::check_same_layout(sa, sb, "map2");
  for (size_t i = 0; i < la.size(); ++i) la[i] = f(la[i], static_cast<const Array&>(lb[i]));
  return tree::unflatten<T>(sa, la);
}

/** A tree prefix of values (defined below). */
template <class V>
class Prefix;

namespace detail {

/** The non-template skeleton of a Prefix: values are indices into a side table. */
struct PrefixShape {
  enum class Kind { Value, Sequence, Keyed } kind = Kind::Value; /**< node kind */
  int value = -1;                    /**< index of the value (Kind::Value) */
  std::vector<std::string> keys;     /**< keys (Kind::Keyed) */
  std::vector<PrefixShape> children; /**< children (Sequence, Keyed) */
};

/** For each leaf of s, the index of the prefix value that covers it; ValueError with
 *  JAX's words ("... must be a tree prefix of ...") naming where they diverge. */
std::vector<int> match_prefix(const PrefixShape& p, const Structure& s, const std::string& api,
                              const std::string& what, const std::string& of,
                              const std::string& root);

/** U converts to a prefix value (strings are keys, not values). */
template <class V, class U>
concept PrefixValueArg =
    std::is_constructible_v<V, U> && !std::is_same_v<std::remove_cvref_t<U>, Prefix<V>> &&
    // A string names a key, never a value (unless the values are strings).
    (!std::is_convertible_v<U, std::string> || std::is_same_v<V, std::string>);

}  // namespace detail

/** A tree prefix of values (JAX's "tree prefix", as taken by in_shardings): a value
 *  covers every leaf below it; a sequence gives one child per element (tuple, pair,
 *  vector and array elements, struct fields in order, positional arguments); a keyed
 *  prefix gives children by map key or struct field name (keys whose subtree has no
 *  leaves may be left out). Written `P("x")`, `{P("x"), {P(), P("y")}}`,
 *  `{{"w", P("x")}, {"b", P()}}`. Default: the value V{}. */
template <class V>
class Prefix {
 public:
  /** The value V{} for every leaf. */
  Prefix() = default;
  /** One value for every leaf below. */
  template <class U>
  requires detail::PrefixValueArg<V, U> Prefix(U&& v) : value_(std::forward<U>(v)) {}
  /** Children by position. */
  Prefix(std::initializer_list<Prefix> children)
      : kind_(detail::PrefixShape::Kind::Sequence), children_(children) {}
  /** Children by position. */
  Prefix(std::vector<Prefix> children)
      : kind_(detail::PrefixShape::Kind::Sequence), children_(std::move(children)) {}
  /** Children by key: `{{"w", P("x")}, {"b", P()}}`. */
  Prefix(std::initializer_list<std::pair<std::string, Prefix>> keyed)
      : kind_(detail::PrefixShape::Kind::Keyed) {
    add_keyed(keyed.begin(), keyed.end());
  }
  /** Children by key (map keys or struct field names). */
  Prefix(const std::map<std::string, Prefix>& keyed) : kind_(detail::PrefixShape::Kind::Keyed) {
    add_keyed(keyed.begin(), keyed.end());
  }

  /** True for a single value. */
  bool is_value() const { return kind_ == detail::PrefixShape::Kind::Value; }
  /** True for children by position. */
  bool is_sequence() const { return kind_ == detail::PrefixShape::Kind::Sequence; }
  /** True for children by key. */
  bool is_keyed() const { return kind_ == detail::PrefixShape::Kind::Keyed; }
  /** The value (meaningful when is_value()). */
  const V& value() const { return value_; }
  /** The children (sequence or keyed). */
  const std::vector<Prefix>& children() const { return children_; }
  /** The keys of a keyed prefix, one per child. */
  const std::vector<std::string>& keys() const { return keys_; }

  /** The skeleton and a table of the values it points into (internal). */
  void skeleton(detail::PrefixShape& out, std::vector<const V*>& values) const {
    out.kind = kind_;
    out.keys = keys_;
    if (is_value()) {
      out.value = static_cast<int>(values.size());
      values.push_back(&value_);
    }
    out.children.resize(children_.size());
    for (size_t i = 0; i < children_.size(); ++i) children_[i].skeleton(out.children[i], values);
  }

 private:
  template <class It>
  void add_keyed(It b, It e) {
    for (; b != e; ++b) {
      keys_.push_back(b->first);
      children_.push_back(b->second);
    }
  }
  detail::PrefixShape::Kind kind_ = detail::PrefixShape::Kind::Value;
  V value_{};
  std::vector<Prefix> children_;
  std::vector<std::string> keys_;
};

/** Names used in broadcast_prefix's errors. */
struct PrefixNames {
  std::string api = "tree";    /**< the bracketed tag: "[tree]" */
  std::string what = "prefix"; /**< the prefix: "jit in_shardings" */
  std::string of = "the tree"; /**< the full tree: "the positional arguments tuple" */
  std::string root = "";       /**< key path of the full tree's root: "args" */
};

/** One value per leaf of s, from a tree prefix of it; ValueError ("... must be a tree
 *  prefix of ...", naming the path where they diverge) when it is not one. */
template <class V>
std::vector<V> broadcast_prefix(const Prefix<V>& p, const Structure& s,
                                const PrefixNames& names = {}) {
  detail::PrefixShape shape;
  std::vector<const V*> values;
  p.skeleton(shape, values);
  std::vector<int> idx =
      detail::match_prefix(shape, s, names.api, names.what, names.of, names.root);
  std::vector<V> out;
  out.reserve(idx.size());
  for (int i : idx) out.push_back(*values[static_cast<size_t>(i)]);
  return out;
}

}  // namespace tsr::tree

/** Hashes a Structure (unordered containers keyed by structure). */
template <>
struct std::hash<tsr::tree::Structure> {
  /** Structure::hash(). */
  size_t operator()(const tsr::tree::Structure& s) const { return s.hash(); }
};

// TSR_TREE(S, f1, f2, ...): declares struct S (at namespace scope, after its definition)
// a tree node with these fields, in this order. Up to 80 fields.
#define TSR_TREE_PARENS_ ()
#define TSR_TREE_EXPAND_(...) \
  TSR_TREE_EXPAND3_(TSR_TREE_EXPAND3_(TSR_TREE_EXPAND3_(TSR_TREE_EXPAND3_(__VA_ARGS__))))
#define TSR_TREE_EXPAND3_(...) \
  TSR_TREE_EXPAND2_(TSR_TREE_EXPAND2_(TSR_TREE_EXPAND2_(TSR_TREE_EXPAND2_(__VA_ARGS__))))
#define TSR_TREE_EXPAND2_(...) \
  TSR_TREE_EXPAND1_(TSR_TREE_EXPAND1_(TSR_TREE_EXPAND1_(TSR_TREE_EXPAND1_(__VA_ARGS__))))
#define TSR_TREE_EXPAND1_(...) __VA_ARGS__
#define TSR_TREE_FOR_EACH_(m, S, ...) \
  __VA_OPT__(TSR_TREE_EXPAND_(TSR_TREE_FOR_EACH_HELPER_(m, S, __VA_ARGS__)))
#define TSR_TREE_FOR_EACH_HELPER_(m, S, a, ...) \
  m(S, a) __VA_OPT__(TSR_TREE_FOR_EACH_AGAIN_ TSR_TREE_PARENS_(m, S, __VA_ARGS__))
#define TSR_TREE_FOR_EACH_AGAIN_() TSR_TREE_FOR_EACH_HELPER_
#define TSR_TREE_FIELD_(S, f) , ::tsr::tree::detail::field<S>(#f, &S::f)

/** Declares struct S a tree node with fields f1, f2, ... (at namespace scope). */
#define TSR_TREE(S, ...)                                                           \
  [[maybe_unused]] constexpr auto tsr_tree_describe(::tsr::tree::detail::Tag<S>) { \
    return ::tsr::tree::detail::struct_info<S>(                                    \
        #S TSR_TREE_FOR_EACH_(TSR_TREE_FIELD_, S, __VA_ARGS__));                   \
  }
