// Trees: the Structure (treedef) nodes, the builder and reader the templates in
// tsr/tree.h walk, and prefix matching.
#include "tsr/tree.h"

#include <cxxabi.h>

#include <charconv>
#include <cstdlib>

#include "tsr/error.h"

namespace tsr::tree {

struct Structure::Node {
  Kind kind = Kind::Leaf;
  int num_leaves = 1;
  size_t hash = 0;
  std::string name;               // struct / custom type name
  std::vector<std::string> keys;  // Dict keys, Struct field names
  std::vector<Node> children;
  std::shared_ptr<const detail::StaticValue> value;  // Kind::Static
};

namespace {

using Node = Structure::Node;

size_t combine(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

// Fills num_leaves and hash of a node whose children are final.
void finalize(Node& n) {
  size_t h = combine(0x51ed27u, static_cast<size_t>(n.kind));
  switch (n.kind) {
    case Kind::Leaf:
      n.num_leaves = 1;
      break;
    case Kind::Static:
      n.num_leaves = 0;
      h = combine(h, n.value->type().hash_code());
      h = combine(h, n.value->hash());
      break;
    case Kind::None:
      n.num_leaves = 0;
      break;
    default:
      n.num_leaves = 0;
      for (const Node& c : n.children) {
        n.num_leaves += c.num_leaves;
        h = combine(h, c.hash);
      }
      h = combine(h, n.children.size());
      h = combine(h, std::hash<std::string>()(n.name));
      for (const auto& k : n.keys) h = combine(h, std::hash<std::string>()(k));
  }
  n.hash = h;
}

std::string quote_key(const std::string& k) { return "'" + k + "'"; }

void print(const Node& n, std::string& out) {
  auto list = [&](const char* open, const char* close) {
    out += open;
    for (size_t i = 0; i < n.children.size(); ++i) {
      if (i) out += ", ";
      if (n.kind == Kind::Dict) out += quote_key(n.keys[i]) + ": ";
      if (n.kind == Kind::Struct) out += n.keys[i] + "=";
      print(n.children[i], out);
    }
    if (n.kind == Kind::Tuple && n.children.size() == 1) out += ",";
    out += close;
  };
  switch (n.kind) {
    case Kind::Leaf:
      out += "*";
      break;
    case Kind::Static: {
      std::string r = n.value->repr();
      out += r.empty() ? "<static>" : "<static " + r + ">";
      break;
    }
    case Kind::None:
      out += "None";
      break;
    case Kind::Some:
      out += "Some(";
      print(n.children[0], out);
      out += ")";
      break;
    case Kind::Tuple:
      list("(", ")");
      break;
    case Kind::List:
      list("[", "]");
      break;
    case Kind::Dict:
      list("{", "}");
      break;
    case Kind::Struct:
      out += n.name;
      list("{", "}");
      break;
    case Kind::Custom:
      out += n.name;
      if (n.children[0].kind == Kind::Tuple) {
        print(n.children[0], out);
      } else {
        out += "(";
        print(n.children[0], out);
        out += ")";
      }
      break;
  }
}

std::string node_str(const Node& n) {
  std::string s;
  print(n, s);
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

// The key path of child i of `parent`, below `base`.
std::string segment(const Node& parent, size_t i, const std::string& base) {
  switch (parent.kind) {
    case Kind::Tuple:
    case Kind::List:
      return base + "[" + std::to_string(i) + "]";
    case Kind::Dict:
      return base + "[" + quote_key(parent.keys[i]) + "]";
    case Kind::Struct:
      return base.empty() ? parent.keys[i] : base + "." + parent.keys[i];
    default:  // Some, Custom: transparent
      return base;
  }
}

std::string where(const std::string& path) { return path.empty() ? "the root" : "'" + path + "'"; }

void collect_paths(const Node& n, const std::string& path, std::vector<std::string>& out) {
  if (n.kind == Kind::Leaf) {
    out.push_back(path);
    return;
  }
  for (size_t i = 0; i < n.children.size(); ++i)
    if (n.children[i].num_leaves > 0) collect_paths(n.children[i], segment(n, i, path), out);
}

bool same_static(const Node& a, const Node& b) {
  return a.value->type() == b.value->type() && a.value->equals(*b.value);
}

bool equal_nodes(const Node& a, const Node& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.kind != b.kind || a.children.size() != b.children.size() ||
      a.name != b.name || a.keys != b.keys)
    return false;
  if (a.kind == Kind::Static) return same_static(a, b);
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!equal_nodes(a.children[i], b.children[i])) return false;
  return true;
}

std::optional<Difference> diff(const Node& a, const Node& b, bool statics,
                               const std::string& path) {
  bool differs = a.kind != b.kind || a.children.size() != b.children.size() || a.name != b.name ||
                 a.keys != b.keys;
  if (!differs && a.kind == Kind::Static && statics) differs = !same_static(a, b);
  if (differs) return Difference{path, node_str(a), node_str(b)};
  for (size_t i = 0; i < a.children.size(); ++i)
    if (auto d = diff(a.children[i], b.children[i], statics, segment(a, i, path))) return d;
  return std::nullopt;
}

const std::shared_ptr<const Node>& leaf_node() {
  static const std::shared_ptr<const Node> leaf = [] {
    auto n = std::make_shared<Node>();
    finalize(*n);
    return std::shared_ptr<const Node>(n);
  }();
  return leaf;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Leaf:
      return "an Array leaf";
    case Kind::Static:
      return "a static value";
    case Kind::Tuple:
      return "a tuple node (std::tuple / std::pair)";
    case Kind::List:
      return "a list node (std::vector / std::array)";
    case Kind::Dict:
      return "a map node (std::map<std::string, T>)";
    case Kind::Some:
    case Kind::None:
      return "an optional node (Some or None)";
    case Kind::Struct:
      return "a TSR_TREE struct node";
    case Kind::Custom:
      return "a NodeTraits node";
  }
  return "a node";
}

}  // namespace

// ---- Structure ----

Structure::Structure() : root_(leaf_node()) {}
Structure::Structure(std::shared_ptr<const Node> root) : root_(std::move(root)) {}

std::string Structure::str() const {
  std::string s;
  print(*root_, s);
  return s;
}
bool Structure::operator==(const Structure& o) const { return equal_nodes(*root_, *o.root_); }
size_t Structure::hash() const { return root_->hash; }
int Structure::num_leaves() const { return root_->num_leaves; }
Kind Structure::kind() const { return root_->kind; }
int Structure::num_children() const { return static_cast<int>(root_->children.size()); }
Structure Structure::child(int i) const {
  if (i < 0 || i >= num_children())
    throw ValueError("[tree] Structure::child(" + std::to_string(i) + ") is out of range. Got " +
                     str() + "; expected an index in [0, " + std::to_string(num_children()) + ").");
  return Structure(std::shared_ptr<const Node>(root_, &root_->children[static_cast<size_t>(i)]));
}
const std::vector<std::string>& Structure::keys() const { return root_->keys; }
const std::string& Structure::name() const { return root_->name; }
const detail::StaticValue* Structure::static_value() const { return root_->value.get(); }

std::vector<std::string> Structure::paths(const std::string& root) const {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(root_->num_leaves));
  collect_paths(*root_, root, out);
  return out;
}

std::optional<Difference> Structure::difference(const Structure& o, bool compare_statics,
                                                const std::string& root) const {
  return diff(*root_, *o.root_, compare_statics, root);
}

Structure Structure::tuple(const std::vector<Structure>& children) {
  auto n = std::make_shared<Node>();
  n->kind = Kind::Tuple;
  for (const auto& c : children) n->children.push_back(*c.root_);
  finalize(*n);
  return Structure(std::move(n));
}

std::ostream& operator<<(std::ostream& os, const Structure& s) { return os << s.str(); }

namespace detail {

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : t.name();
  std::free(d);
  // std::string spells out its allocator when demangled.
  const std::string longhand =
      "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  for (size_t at; (at = out.find(longhand)) != std::string::npos;)
    out.replace(at, longhand.size(), "std::string");
  return out;
}

std::string enum_repr(const std::type_info& t, long long v) {
  std::string n = type_name(t);
  size_t colon = n.rfind("::");
  if (colon != std::string::npos) n = n.substr(colon + 2);
  return n + "(" + std::to_string(v) + ")";
}

std::string repr_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// ---- Builder ----

struct Builder::Impl {
  Node root;
  bool has_root = false;
  std::vector<Node*> stack;

  Node* next() {
    if (stack.empty()) {
      if (has_root)
        throw ValueError(
            "[tree] internal: a tree has two roots. Got a second top-level node; "
            "expected one. This is a bug in a NodeTraits specialization or Tessera.");
      has_root = true;
      return &root;
    }
    Node* parent = stack.back();
    parent->children.emplace_back();
    return &parent->children.back();
  }
};

Builder::Builder(bool want_structure, bool want_leaves)
    : want_structure_(want_structure), want_leaves_(want_leaves) {
  if (want_structure_) impl_ = std::make_unique<Impl>();
}
Builder::~Builder() = default;

void Builder::leaf(const Array& a) {
  if (want_leaves_) leaves_.push_back(a);
  if (want_structure_) finalize(*impl_->next());
}

void Builder::static_value(std::shared_ptr<const StaticValue> v) {
  Node* n = impl_->next();
  n->kind = Kind::Static;
  n->value = std::move(v);
  finalize(*n);
}

void Builder::none() {
  if (!want_structure_) return;
  Node* n = impl_->next();
  n->kind = Kind::None;
  finalize(*n);
}

void Builder::open(Kind k, size_t n, const char* name) {
  if (!want_structure_) return;
  Node* node = impl_->next();
  node->kind = k;
  node->name = name;
  node->children.reserve(n);
  impl_->stack.push_back(node);
}

void Builder::key(std::string_view k) {
  if (want_structure_) impl_->stack.back()->keys.emplace_back(k);
}

void Builder::close() {
  if (!want_structure_) return;
  finalize(*impl_->stack.back());
  impl_->stack.pop_back();
}

Structure Builder::take_structure() {
  return Structure(std::make_shared<const Node>(std::move(impl_->root)));
}

// ---- Reader ----

struct Reader::Impl {
  struct Frame {
    const Node* node;
    size_t next;
  };
  Structure s;
  const std::vector<Array>& leaves;
  size_t leaf = 0;
  bool root_taken = false;
  std::vector<Frame> stack;

  Impl(const Structure& st, const std::vector<Array>& l) : s(st), leaves(l) {}

  std::string path() const {
    std::string p;
    for (const Frame& f : stack) p = segment(*f.node, f.next - 1, p);
    return p;
  }
  std::string open_path() const {  // the path of the open node itself
    std::string p;
    for (size_t i = 0; i + 1 < stack.size(); ++i) p = segment(*stack[i].node, stack[i].next - 1, p);
    return p;
  }

  [[noreturn]] void fail(const Node& n, const std::string& expected) const {
    throw ValueError("[tree] unflatten: the Structure does not describe the requested type at " +
                     where(path()) + ". Got " + node_str(n) + "; expected " + expected +
                     ". Unflatten with the Structure made by flattening a value of that type.");
  }

  const Node& take(const std::string& expected) {
    if (stack.empty()) {
      if (root_taken)
        throw ValueError("[tree] unflatten: the type reads past the end of the Structure. Got " +
                         s.str() + "; expected " + expected +
                         " after it. Unflatten with the Structure made by flattening a value of "
                         "that type.");
      root_taken = true;
      return s.node();
    }
    Frame& f = stack.back();
    if (f.next >= f.node->children.size())
      throw ValueError("[tree] unflatten: the type has more children than the Structure at " +
                       where(open_path()) + ". Got " + node_str(*f.node) + " with " +
                       std::to_string(f.node->children.size()) + " children; expected " + expected +
                       " after them. Unflatten with the Structure made by flattening "
                       "a value of that type.");
    return f.node->children[f.next++];
  }
};

Reader::Reader(const Structure& s, const std::vector<Array>& leaves)
    : impl_(std::make_unique<Impl>(s, leaves)) {
  if (static_cast<size_t>(s.num_leaves()) != leaves.size())
    throw ValueError("[tree] unflatten: the number of leaves differs from the Structure's. Got " +
                     std::to_string(leaves.size()) + " leaves; expected " +
                     std::to_string(s.num_leaves()) + " for " + node_str(s.node()) +
                     ". Pass exactly one Array per leaf, in the order flatten gave them.");
}
Reader::~Reader() = default;

Array Reader::leaf() {
  const Node& n = impl_->take("an Array leaf");
  if (n.kind != Kind::Leaf) impl_->fail(n, "an Array leaf (*)");
  return impl_->leaves[impl_->leaf++];
}

const void* Reader::static_value(const std::type_info& t) {
  const Node& n = impl_->take("a static " + type_name(t));
  if (n.kind != Kind::Static) impl_->fail(n, "a static " + type_name(t));
  if (n.value->type() != t)
    impl_->fail(n, "a static " + type_name(t) + " (the structure holds type " +
                       type_name(n.value->type()) + ")");
  return n.value->get();
}

size_t Reader::open(Kind k, const char* what, const char* name, long size) {
  const Node& n = impl_->take(std::string("a ") + what);
  std::string expected = kind_name(k) + std::string(" for ") + what;
  if (n.kind != k) impl_->fail(n, expected);
  if (name && n.name != name) impl_->fail(n, expected + " named " + name);
  if (size >= 0 && n.children.size() != static_cast<size_t>(size))
    impl_->fail(n, expected + " with " + std::to_string(size) + " children");
  impl_->stack.push_back({&n, 0});
  return n.children.size();
}

const std::string& Reader::key(size_t i) const { return impl_->stack.back().node->keys.at(i); }

void Reader::field(const char* name) {
  const auto& f = impl_->stack.back();
  if (f.next >= f.node->keys.size() || f.node->keys[f.next] != name)
    impl_->fail(*f.node, std::string("a field named '") + name + "' next");
}

bool Reader::some(const char* what) {
  const Node& n = impl_->take(std::string("a ") + what);
  if (n.kind == Kind::None) return false;
  if (n.kind != Kind::Some) impl_->fail(n, std::string("Some(...) or None for ") + what);
  impl_->stack.push_back({&n, 0});
  return true;
}

void Reader::close() {
  const auto& f = impl_->stack.back();
  if (f.next != f.node->children.size())
    throw ValueError("[tree] unflatten: the type reads fewer children than the Structure has at " +
                     where(impl_->open_path()) + ". Got " + node_str(*f.node) + "; expected " +
                     std::to_string(f.next) +
                     " children. Unflatten with the Structure made by flattening a value of "
                     "that type.");
  impl_->stack.pop_back();
}

void Reader::finish() {
  if (!impl_->root_taken || !impl_->stack.empty() || impl_->leaf != impl_->leaves.size())
    throw ValueError("[tree] unflatten: the type does not read the whole Structure. Got " +
                     impl_->s.str() + "; expected all of its " +
                     std::to_string(impl_->leaves.size()) + " leaves to be read (read " +
                     std::to_string(impl_->leaf) +
                     "). Unflatten with the Structure made by flattening a value of that type.");
}

void check_same_layout(const Structure& a, const Structure& b, const char* api) {
  if (auto d = a.difference(b, /*compare_statics=*/false))
    throw ValueError(std::string("[tree] ") + api +
                     " needs two trees of the same structure; they differ at " + where(d->path) +
                     ". Got " + d->theirs + " in the second tree; expected " + d->ours +
                     " (as in the first). Pass trees of the same structure (static values may "
                     "differ; the result keeps the first tree's).");
}

// ---- Prefixes ----

namespace {

struct PrefixMatcher {
  const std::string &api, &what, &of;
  std::vector<int>& out;

  static std::string describe(const PrefixShape& p) {
    if (p.kind == PrefixShape::Kind::Sequence)
      return "a sequence of " + std::to_string(p.children.size()) +
             (p.children.size() == 1 ? " entry" : " entries");
    std::string s = "keys ";
    for (size_t i = 0; i < p.keys.size(); ++i) s += (i ? ", " : "") + quote_key(p.keys[i]);
    return p.keys.empty() ? "an empty set of keys" : s;
  }

  [[noreturn]] void fail(const std::string& path, const std::string& detail, const std::string& got,
                         const std::string& expected) const {
    throw ValueError("[" + api + "] " + what + " must be a tree prefix of " + of +
                     "; they diverge at " + where(path) + ": " + detail + ". Got " + got +
                     "; expected " + expected +
                     ". Give one entry per child there (by position or by key), or a single "
                     "value for the whole subtree.");
  }

  void match(const PrefixShape& p, const Node& n, const std::string& path) {
    if (p.kind == PrefixShape::Kind::Value) {
      out.insert(out.end(), static_cast<size_t>(n.num_leaves), p.value);
      return;
    }
    if (n.kind == Kind::Some || n.kind == Kind::Custom) return match(p, n.children[0], path);
    bool positional = n.kind == Kind::Tuple || n.kind == Kind::List || n.kind == Kind::Struct;
    bool keyed = n.kind == Kind::Dict || n.kind == Kind::Struct;
    std::string node = node_str(n);
    std::string alternatives =
        std::string("a single value") +
        (positional ? ", or a sequence of " + std::to_string(n.children.size()) + " entries" : "") +
        (keyed ? ", or keys among its keys" : "");
    if (p.kind == PrefixShape::Kind::Sequence) {
      if (!positional)
        fail(path, "the prefix has " + describe(p) + " where the tree has " + node, describe(p),
             alternatives);
      if (p.children.size() != n.children.size())
        fail(path,
             "different lengths: the prefix has " + std::to_string(p.children.size()) +
                 " entries where the tree's node " + node + " has " +
                 std::to_string(n.children.size()) + " children",
             describe(p), alternatives);
      for (size_t i = 0; i < n.children.size(); ++i)
        match(p.children[i], n.children[i], segment(n, i, path));
      return;
    }
    if (!keyed)
      fail(path, "the prefix has " + describe(p) + " where the tree has " + node, describe(p),
           alternatives);
    for (const auto& k : p.keys) {
      bool found = false;
      for (const auto& nk : n.keys) found = found || nk == k;
      if (!found)
        fail(path,
             "the prefix names key " + quote_key(k) + " that the tree's node " + node +
                 " does not have",
             describe(p), "keys among the node's keys");
    }
    for (size_t i = 0; i < n.children.size(); ++i) {
      size_t j = 0;
      while (j < p.keys.size() && p.keys[j] != n.keys[i]) ++j;
      if (j < p.keys.size()) {
        match(p.children[j], n.children[i], segment(n, i, path));
      } else if (n.children[i].num_leaves > 0) {
        fail(path,
             "the prefix leaves out key " + quote_key(n.keys[i]) + ", which holds " +
                 std::to_string(n.children[i].num_leaves) +
                 (n.children[i].num_leaves == 1 ? " leaf" : " leaves"),
             describe(p), "an entry for every key that holds leaves");
      }
    }
  }
};

}  // namespace

std::vector<int> match_prefix(const PrefixShape& p, const Structure& s, const std::string& api,
                              const std::string& what, const std::string& of,
                              const std::string& root) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(s.num_leaves()));
  PrefixMatcher m{api, what, of, out};
  m.match(p, s.node(), root);
  return out;
}

}  // namespace detail
}  // namespace tsr::tree
