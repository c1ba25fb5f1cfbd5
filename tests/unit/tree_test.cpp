// Trees: every container kind, TSR_TREE structs with statics, custom nodes, structure
// printing/equality/paths, map/map2, prefixes, and jit / device_put / shard over trees.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <tsr/tsr.h>

#include "support/error_of.h"

using namespace tsr;

namespace {

enum class Act { Relu, Tanh };

Array apply_act(Act a, const Array& x) { return a == Act::Relu ? maximum(x, 0.0) : tanh(x); }
Array twice(const Array& x) { return x * 2.0; }
Array thrice(const Array& x) { return x * 3.0; }

struct Mlp {
  Array w1, b1, w2, b2;
  Act act = Act::Relu;
  std::function<Array(const Array&)> post;
  int depth = 2;
  std::string name = "mlp";
};
TSR_TREE(Mlp, w1, b1, w2, b2, act, post, depth, name)

struct Layer {
  Array w;
  Array b;
};
TSR_TREE(Layer, w, b)

struct Params {
  std::vector<Layer> layers;
  std::map<std::string, Array> extra;
  std::optional<Array> scale;
  std::vector<int> sizes;  // no Array can live here: one static value
};
TSR_TREE(Params, layers, extra, scale, sizes)

// A recursive tree type.
struct Node {
  Array value;
  std::vector<Node> kids;
};
TSR_TREE(Node, value, kids)

struct Tagged {
  Array a, b;
  int tag = 0;
};

}  // namespace

// A user container made a node through NodeTraits (at global scope: qualified name).
template <>
struct tsr::tree::NodeTraits<Tagged> {
  static constexpr const char* name = "Tagged";
  static auto children(const Tagged& t) { return std::make_tuple(t.a, t.b, t.tag); }
  static Tagged from_children(std::tuple<Array, Array, int> c) {
    return Tagged{std::get<0>(c), std::get<1>(c), std::get<2>(c)};
  }
};

namespace {

std::vector<float> vals(const Array& a) { return a.to_vector<float>(); }
Array vec(std::vector<float> v) { return array(v); }

Params make_params() {
  Params p;
  p.layers = {Layer{vec({1, 2}), vec({3})}, Layer{vec({4}), vec({5, 6})}};
  p.extra = {{"z", vec({7})}, {"a", vec({8})}};
  p.scale = vec({9});
  p.sizes = {2, 1};
  return p;
}

TEST(Tree, LeavesDepthFirstInDeclarationAndKeyOrder) {
  Params p = make_params();
  std::vector<Array> l = tree::leaves(p);
  ASSERT_EQ(l.size(), 7u);
  std::vector<float> firsts;
  for (const Array& a : l) firsts.push_back(vals(a)[0]);
  // Maps go by key order: 'a' (8) before 'z' (7).
  EXPECT_EQ(firsts, (std::vector<float>{1, 3, 4, 5, 8, 7, 9}));
  EXPECT_EQ(tree::structure(p).str(),
            "Params{layers=[Layer{w=*, b=*}, Layer{w=*, b=*}], extra={'a': *, 'z': *}, "
            "scale=Some(*), sizes=<static>}");
  EXPECT_EQ(tree::structure(p).num_leaves(), 7);
}

TEST(Tree, EveryContainerKind) {
  Array x = vec({1}), y = vec({2});
  std::tuple<Array, std::vector<Array>, std::array<Array, 2>, std::pair<Array, int>> t{
      x, {x, y}, {y, x}, {y, 5}};
  EXPECT_EQ(tree::structure(t).str(), "(*, [*, *], [*, *], (*, <static 5>))");
  auto [l, s] = tree::flatten(t);
  EXPECT_EQ(l.size(), 6u);
  auto back = tree::unflatten<decltype(t)>(s, l);
  EXPECT_EQ(vals(std::get<2>(back)[0])[0], 2.f);
  EXPECT_EQ(std::get<3>(back).second, 5);
  // Optional presence, empty containers, a lone leaf, a lone static.
  std::optional<Array> none;
  EXPECT_EQ(tree::structure(none).str(), "None");
  EXPECT_EQ(tree::structure(std::optional<Array>(x)).str(), "Some(*)");
  EXPECT_EQ(tree::structure(std::vector<Array>{}).str(), "[]");
  EXPECT_EQ(tree::structure(std::tuple<Array>{x}).str(), "(*,)");
  EXPECT_EQ(tree::structure(x).str(), "*");
  EXPECT_EQ(tree::structure(3.5).str(), "<static 3.5>");
  EXPECT_EQ(tree::structure(std::string("s")).str(), "<static 's'>");
  EXPECT_FALSE(tree::unflatten<std::optional<Array>>(tree::structure(none), {}).has_value());
  EXPECT_EQ(tree::unflatten<double>(tree::structure(3.5), {}), 3.5);
  // Nested maps of vectors of optionals.
  std::map<std::string, std::vector<std::optional<Array>>> m{{"k", {x, std::nullopt, y}}};
  EXPECT_EQ(tree::structure(m).str(), "{'k': [Some(*), None, Some(*)]}");
  auto m2 = tree::unflatten<decltype(m)>(tree::structure(m), {y, x});
  EXPECT_EQ(vals(*m2.at("k")[0])[0], 2.f);
  EXPECT_FALSE(m2.at("k")[1].has_value());
  EXPECT_TRUE(tree::is_tree_v<decltype(m)>);
  // Containers that hold Arrays without being nodes are compile errors, not statics.
  static_assert(tree::detail::Unsupported<std::map<int, Array>>::value);
  static_assert(tree::detail::Unsupported<std::variant<int, Array>>::value);
  static_assert(!tree::detail::Unsupported<std::map<int, float>>::value);
  static_assert(!tree::detail::Unsupported<std::string>::value);
  EXPECT_FALSE(tree::is_tree_v<std::vector<int>>);
}

TEST(Tree, StructStaticsSurviveUnflatten) {
  Mlp m{vec({1}), vec({2}), vec({3}), vec({4}), Act::Tanh, twice, 3, "enc"};
  auto [l, s] = tree::flatten(m);
  EXPECT_EQ(s.str(),
            "Mlp{w1=*, b1=*, w2=*, b2=*, act=<static Act(1)>, post=<static>, depth=<static 3>, "
            "name=<static 'enc'>}");
  std::vector<Array> doubled;
  for (const Array& a : l) doubled.push_back(a * 2.0);
  Mlp r = tree::unflatten<Mlp>(s, doubled);
  EXPECT_EQ(vals(r.b2)[0], 8.f);
  EXPECT_EQ(r.act, Act::Tanh);
  EXPECT_EQ(r.depth, 3);
  EXPECT_EQ(r.name, "enc");
  EXPECT_EQ(vals(r.post(vec({5})))[0], 10.f);
  EXPECT_EQ(s.kind(), tree::Kind::Struct);
  EXPECT_EQ(s.name(), "Mlp");
  EXPECT_EQ(s.keys()[4], "act");
  EXPECT_EQ(s.child(6).str(), "<static 3>");
}

TEST(Tree, StructureEqualityComparesStatics) {
  Mlp a{vec({1}), vec({2}), vec({3}), vec({4}), Act::Relu, twice, 2, "x"};
  Mlp b = a;
  b.w1 = vec({100});  // leaves do not matter
  EXPECT_EQ(tree::structure(a), tree::structure(b));
  EXPECT_EQ(tree::structure(a).hash(), tree::structure(b).hash());
  auto differs = [&](auto change) {
    Mlp c = a;
    change(c);
    return !(tree::structure(a) == tree::structure(c));
  };
  EXPECT_TRUE(differs([](Mlp& c) { c.depth = 3; }));
  EXPECT_TRUE(differs([](Mlp& c) { c.name = "y"; }));
  EXPECT_TRUE(differs([](Mlp& c) { c.act = Act::Tanh; }));
  EXPECT_TRUE(differs([](Mlp& c) { c.post = thrice; }));  // another function pointer
  EXPECT_TRUE(differs([](Mlp& c) { c.post = [](const Array& x) { return x; }; }));
  EXPECT_FALSE(differs([](Mlp& c) { c.post = twice; }));
  // Lambdas of one closure type compare equal whatever they capture (documented).
  auto make = [](double k) {
    return std::function<Array(const Array&)>([k](const Array& x) { return x * k; });
  };
  Mlp d = a, e = a;
  d.post = make(1);
  e.post = make(2);
  EXPECT_EQ(tree::structure(d), tree::structure(e));
  // Statics of different types, and NaN keys that still equal themselves.
  EXPECT_NE(tree::structure(1), tree::structure(1L));
  EXPECT_EQ(tree::structure(std::nan("")), tree::structure(std::nan("")));
  // The difference names the path.
  Mlp f = a;
  f.depth = 7;
  auto diff = tree::structure(a).difference(tree::structure(f), true, "params");
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->path, "params.depth");
  EXPECT_EQ(diff->ours, "<static 2>");
  EXPECT_EQ(diff->theirs, "<static 7>");
  EXPECT_FALSE(tree::structure(a).difference(tree::structure(f), false).has_value());
  std::ostringstream os;
  os << tree::structure(std::make_pair(a.w1, 1));
  EXPECT_EQ(os.str(), "(*, <static 1>)");
}

TEST(Tree, Paths) {
  Params p = make_params();
  EXPECT_EQ(tree::paths(p, "params"),
            (std::vector<std::string>{"params.layers[0].w", "params.layers[0].b",
                                      "params.layers[1].w", "params.layers[1].b",
                                      "params.extra['a']", "params.extra['z']", "params.scale"}));
  EXPECT_EQ(tree::paths(p)[0], "layers[0].w");
  Array x = vec({1});
  EXPECT_EQ(tree::paths(std::make_tuple(x, 3, std::vector<Array>{x, x})),
            (std::vector<std::string>{"[0]", "[2][0]", "[2][1]"}));
  EXPECT_EQ(tree::paths(std::map<std::string, Array>{{"key", x}}),
            (std::vector<std::string>{"['key']"}));
  EXPECT_EQ(tree::paths(x), (std::vector<std::string>{""}));
}

TEST(Tree, CustomNode) {
  Tagged t{vec({1}), vec({2}), 7};
  auto [l, s] = tree::flatten(t);
  EXPECT_EQ(s.str(), "Tagged(*, *, <static 7>)");
  EXPECT_EQ(tree::paths(std::vector<Tagged>{t}, "v"),
            (std::vector<std::string>{"v[0][0]", "v[0][1]"}));
  Tagged back = tree::unflatten<Tagged>(s, {l[1], l[0]});
  EXPECT_EQ(vals(back.a)[0], 2.f);
  EXPECT_EQ(back.tag, 7);
}

TEST(Tree, RecursiveStruct) {
  Node n{vec({1}), {Node{vec({2}), {}}, Node{vec({3}), {Node{vec({4}), {}}}}}};
  EXPECT_EQ(tree::structure(n).str(),
            "Node{value=*, kids=[Node{value=*, kids=[]}, Node{value=*, kids=[Node{value=*, "
            "kids=[]}]}]}");
  EXPECT_EQ(tree::paths(n)[3], "kids[1].kids[0].value");
  Node m = tree::map([](const Array& a) { return a * 10.0; }, n);
  EXPECT_EQ(vals(m.kids[1].kids[0].value)[0], 40.f);
}

TEST(Tree, MapAndMap2) {
  Params p = make_params();
  Params q = tree::map([](const Array& a) { return a + 10.0; }, p);
  EXPECT_EQ(vals(q.layers[1].b), (std::vector<float>{15, 16}));
  EXPECT_EQ(vals(q.extra.at("z"))[0], 17.f);
  EXPECT_EQ(q.sizes, p.sizes);
  std::vector<std::string> seen;
  Params r = tree::map_with_path(
      [&](const std::string& path, const Array& a) {
        seen.push_back(path);
        return path == "scale" ? a * 0.0 : a;
      },
      p);
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(vals(*r.scale)[0], 0.f);
  EXPECT_EQ(vals(r.layers[0].w)[1], 2.f);
  Params s = tree::map2([](const Array& a, const Array& b) { return a - b; }, q, p);
  EXPECT_EQ(vals(s.layers[0].w), (std::vector<float>{10, 10}));
  // A bare Array is a one-leaf tree (tsr::flatten from ops.h must not be found).
  Array d = tree::map2([](const Array& a, const Array& b) { return a - b; }, q.layers[0].w,
                       p.layers[0].w);
  EXPECT_EQ(vals(d), (std::vector<float>{10, 10}));
  // Statics may differ between the two (the first tree's are kept).
  Params p2 = p;
  p2.sizes = {9};
  EXPECT_EQ(tree::map2([](const Array& a, const Array&) { return a; }, p, p2).sizes, p.sizes);
  // A different structure names the first differing path.
  Params bad = p;
  bad.layers.pop_back();
  std::string e = error_of<ValueError>(
      [&] { tree::map2([](const Array& a, const Array&) { return a; }, p, bad); });
  EXPECT_HAS(e, "[tree] map2 needs two trees of the same structure; they differ at 'layers'");
  EXPECT_HAS(e, "Got [Layer{w=*, b=*}] in the second tree; expected [Layer{w=*, b=*}, ");
  Params none = p;
  none.scale.reset();
  e = error_of<ValueError>(
      [&] { tree::map2([](const Array& a, const Array&) { return a; }, p, none); });
  EXPECT_HAS(e, "they differ at 'scale'. Got None in the second tree; expected Some(*)");
}

TEST(Tree, UnflattenChecksTheStructure) {
  Params p = make_params();
  auto [l, s] = tree::flatten(p);
  std::string e = error_of<ValueError>([&] { tree::unflatten<Params>(s, {l[0]}); });
  EXPECT_HAS(e,
             "[tree] unflatten: the number of leaves differs from the Structure's. Got 1 "
             "leaves; expected 7");
  e = error_of<ValueError>([&] { tree::unflatten<Mlp>(s, l); });
  EXPECT_HAS(e, "does not describe the requested type at the root. Got Params{");
  EXPECT_HAS(e, "expected a TSR_TREE struct node for Mlp named Mlp");
  using T = std::tuple<Array, int>;
  tree::Structure ts = tree::structure(T{l[0], 1});
  e = error_of<ValueError>([&] { tree::unflatten<std::tuple<Array, std::string>>(ts, {l[0]}); });
  EXPECT_HAS(e, "at '[1]'. Got <static 1>; expected a static std::");
  e = error_of<ValueError>([&] { tree::unflatten<std::tuple<Array, Array, int>>(ts, {l[0]}); });
  EXPECT_HAS(e, "with 3 children");
  e = error_of<ValueError>([&] { tree::unflatten<std::vector<Array>>(ts, {l[0]}); });
  EXPECT_HAS(e, "Got (*, <static 1>); expected a list node");
  EXPECT_EQ(tree::unflatten<std::vector<Array>>(tree::structure(std::vector<Array>{l[0], l[1]}),
                                                {l[1], l[0]})
                .size(),
            2u);
}

TEST(Tree, PrefixBroadcast) {
  Params p = make_params();
  tree::Structure s = tree::structure(p);
  // One value for everything.
  EXPECT_EQ(tree::broadcast_prefix(tree::Prefix<int>(4), s), std::vector<int>(7, 4));
  // By struct field name (a key whose subtree has no leaves may be left out).
  tree::Prefix<int> by_key = {
      {"layers", {{{"w", 1}, {"b", 2}}, 3}}, {"extra", {{"a", 4}, {"z", 5}}}, {"scale", 6}};
  EXPECT_EQ(tree::broadcast_prefix(by_key, s), (std::vector<int>{1, 2, 3, 3, 4, 5, 6}));
  // By position: struct fields in order (the static `sizes` needs an entry too).
  tree::Prefix<int> by_pos = {{7, 8}, 9, 0, 0};
  EXPECT_EQ(tree::broadcast_prefix(by_pos, s), (std::vector<int>{7, 7, 8, 8, 9, 9, 0}));
  std::map<std::string, tree::Prefix<int>> m{{"layers", 1}, {"extra", 2}, {"scale", 3}};
  EXPECT_EQ(tree::broadcast_prefix(tree::Prefix<int>(m), s),
            (std::vector<int>{1, 1, 1, 1, 2, 2, 3}));
  tree::Prefix<bool> flags = {true, {false, true}};
  Array x = vec({1});
  auto t = std::make_tuple(x, std::make_pair(x, std::vector<Array>{x, x}));
  EXPECT_EQ(tree::broadcast_prefix(flags, tree::structure(t)),
            (std::vector<bool>{true, false, true, true}));

  // Optional values (vmap's in_axes shape): nullopt is a value like any other.
  tree::Prefix<std::optional<int>> axes = {0, std::nullopt};
  EXPECT_EQ(
      tree::broadcast_prefix(axes, tree::structure(std::make_tuple(x, std::vector<Array>{x, x}))),
      (std::vector<std::optional<int>>{0, std::nullopt, std::nullopt}));

  // Mismatches name the path where the prefix and the tree diverge.
  std::string e = error_of<ValueError>([&] {
    tree::broadcast_prefix(tree::Prefix<int>{{1, 2, 3}, 0, 0, 0}, s);
  });
  EXPECT_HAS(e,
             "[tree] prefix must be a tree prefix of the tree; they diverge at 'layers': "
             "different lengths: the prefix has 3 entries where the tree's node "
             "[Layer{w=*, b=*}, Layer{w=*, b=*}] has 2 children");
  e = error_of<ValueError>([&] {
    tree::broadcast_prefix(tree::Prefix<int>{{"layers", 1}, {"scale", 2}}, s, {.root = "p"});
  });
  EXPECT_HAS(e, "they diverge at 'p': the prefix leaves out key 'extra', which holds 2 leaves");
  e = error_of<ValueError>([&] {
    tree::broadcast_prefix(tree::Prefix<int>{{"layers", 1}, {"nope", 2}}, s);
  });
  EXPECT_HAS(e, "the prefix names key 'nope' that the tree's node");
  e = error_of<ValueError>([&] {
    tree::broadcast_prefix(tree::Prefix<int>{{"layers", {1, {{2, 3}, 4}}}}, s);
  });
  EXPECT_HAS(e,
             "they diverge at 'layers[1].w': the prefix has a sequence of 2 entries where "
             "the tree has *");
  e = error_of<ValueError>([&] { tree::broadcast_prefix(tree::Prefix<int>{1, 2}, s); });
  EXPECT_HAS(e, "different lengths: the prefix has 2 entries where the tree's node Params{");
  e = error_of<ValueError>([&] {
    tree::broadcast_prefix(tree::Prefix<int>{{"a", 1}}, tree::structure(t));
  });
  EXPECT_HAS(e, "they diverge at the root: the prefix has keys 'a' where the tree has (*, ");
}

// ---- jit, device_put and shard over trees ----

class TreeJit : public ::testing::Test {
 protected:
  Mesh mesh = make_mesh({2, 4}, {"X", "Y"});
  MeshScope scope{mesh};
};

TEST_F(TreeJit, StructArgumentWithStatics) {
  int calls = 0;
  auto f = jit([&calls](const Mlp& m, const Array& x) {
    ++calls;
    Array h = apply_act(m.act, matmul(x, m.w1) + m.b1);
    for (int i = 1; i < m.depth; ++i) h = h + 1.0;
    return m.post(matmul(h, m.w2) + m.b2);
  });
  Mlp m{ones({4, 8}), zeros({8}), ones({8, 2}), zeros({2}), Act::Relu, twice, 1, "m"};
  Array x = device_put(ones({8, 4}), P("X"));
  EXPECT_EQ(vals(f(m, x))[0], 64.f);  // relu(4) summed over 8, times 2
  EXPECT_EQ(vals(f(m, x * 2.0))[0], 128.f);
  EXPECT_EQ(f.trace_count(), 1);
  // Each static member is part of the cache key.
  Mlp deeper = m;
  deeper.depth = 2;
  EXPECT_EQ(vals(f(deeper, x))[0], 80.f);
  EXPECT_EQ(f.trace_count(), 2);
  Mlp renamed = m;
  renamed.name = "other";
  f(renamed, x);
  EXPECT_EQ(f.trace_count(), 3);
  Mlp tanh_act = m;
  tanh_act.act = Act::Tanh;
  EXPECT_NEAR(vals(f(tanh_act, x))[0], 16 * std::tanh(4.0), 1e-4);
  EXPECT_EQ(f.trace_count(), 4);
  Mlp three = m;
  three.post = thrice;
  EXPECT_EQ(vals(f(three, x))[0], 96.f);
  EXPECT_EQ(f.trace_count(), 5);
  f(m, x);
  f(three, x);
  EXPECT_EQ(f.trace_count(), 5);
  EXPECT_EQ(calls, 5);
  EXPECT_HAS(make_jaxpr([](const Mlp& m) { return m.w1 + 1.0; }, m), "a:f32[4,8] b:f32[8]");
}

TEST_F(TreeJit, MapResultRebuiltOnCacheHit) {
  int calls = 0;
  auto f = jit([&calls](const Array& x) {
    ++calls;
    return std::map<std::string, Array>{{"sin", sin(x)}, {"twice", x * 2.0}};
  });
  Array a = device_put(arange(8.f), P("X"));
  auto r1 = f(a);
  auto r2 = f(a + 1.0);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(vals(r2.at("twice"))[7], 16.f);
  EXPECT_NEAR(vals(r1.at("sin"))[1], std::sin(1.f), 1e-6);
  EXPECT_EQ(typeof(r2.at("twice")).str(), "f32[8@X]");
}

TEST_F(TreeJit, TupleOfVectorsAndStaticResult) {
  using In = std::tuple<std::vector<Array>, std::vector<Array>>;
  auto f = jit([](const In& t) {
    std::vector<Array> out;
    for (size_t i = 0; i < std::get<0>(t).size(); ++i)
      out.push_back(std::get<0>(t)[i] * std::get<1>(t)[i]);
    return std::make_pair(out, static_cast<int>(out.size()));
  });
  In in{{full({4}, 2), full({4}, 3)}, {full({4}, 5), full({4}, 7)}};
  auto [prods, n] = f(in);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(vals(prods[1])[0], 21.f);
  auto again = f(in);
  EXPECT_EQ(again.second, 2);  // the static part of the result survives a cache hit
  EXPECT_EQ(f.trace_count(), 1);
  In three{{full({4}, 1), full({4}, 1), full({4}, 1)}, {full({4}, 1), full({4}, 1), full({4}, 1)}};
  EXPECT_EQ(f(three).second, 3);
  EXPECT_EQ(f.trace_count(), 2);
}

TEST_F(TreeJit, ShardingsAsPrefixes) {
  auto f = jit([](const Layer& l, const Array& x) { return std::make_tuple(l.w * 2.0, l.b, x); },
               {.in_shardings = {{{"w", P("X", "Y")}, {"b", P("Y")}}, P()},
                .out_shardings = {P(), std::monostate{}, P("Y")}});
  Layer l{iota({8, 4}), iota({4})};
  auto [w, b, x] = f(l, iota({8}));
  EXPECT_EQ(typeof(w).str(), "f32[8,4]");
  EXPECT_EQ(typeof(b).str(), "f32[4@Y]");
  EXPECT_EQ(typeof(x).str(), "f32[8@Y]");
  EXPECT_EQ(vals(w)[31], 62.f);
  EXPECT_HAS(f.lower(l, iota({8})).as_text(), "a:f32[8@X,4@Y] b:f32[4@Y] c:f32[8]");
  // One placement for every argument leaf.
  auto g = jit([](const Layer& l) { return l.w; }, {.in_shardings = P("X")});
  EXPECT_EQ(typeof(g(l)).str(), "f32[8@X,4]");
  // A prefix that does not fit names the path.
  auto bad = jit([](const Layer& l, const Array& x) { return x; },
                 {.in_shardings = {{P(), P(), P()}, P()}});
  std::string e = error_of<ValueError>([&] { bad(l, iota({8})); });
  EXPECT_HAS(e,
             "[jit] jit in_shardings must be a tree prefix of the positional arguments tuple; "
             "they diverge at 'args[0]': different lengths: the prefix has 3 entries where the "
             "tree's node Layer{w=*, b=*} has 2 children");
  auto bad_out = jit(
      [](const Array& x) {
        return std::map<std::string, Array>{{"a", x}};
      },
      {.out_shardings = {{"b", P()}}});
  e = error_of<ValueError>([&] { bad_out(iota({8})); });
  EXPECT_HAS(e,
             "[jit] jit out_shardings must be a tree prefix of the corresponding value (the "
             "result); they diverge at 'result': the prefix names key 'b'");
  // Static arguments take a (ignored) entry: the count is of positional arguments.
  auto scaled = jit([](const Array& x, int k) { return x * static_cast<double>(k); },
                    {.in_shardings = {P("X"), std::monostate{}}});
  EXPECT_EQ(typeof(scaled(iota({8}), 3)).str(), "f32[8@X]");
  auto short_in = jit([](const Array& x, int k) { return x * static_cast<double>(k); },
                      {.in_shardings = {P("X")}});
  EXPECT_HAS(error_of<ValueError>([&] { short_in(iota({8}), 3); }),
             "got a tuple or list of length 1 for an args tuple of length 2");
}

TEST_F(TreeJit, DonationByArgnumAndPrefix) {
  auto f =
      jit([](const Layer& l, const Array& x) { return l.w + l.b + x; }, {.donate_argnums = {0}});
  Layer l{device_put(ones({8}), P("X")), device_put(ones({8}), P("X"))};
  Array x = device_put(ones({8}), P("X"));
  EXPECT_EQ(vals(f(l, x))[0], 3.f);
  EXPECT_HAS(error_of<ValueError>([&] { vals(l.w); }), "donated");
  EXPECT_HAS(error_of<ValueError>([&] { vals(l.b); }), "donated");
  EXPECT_EQ(vals(x)[0], 1.f);  // not donated
  // A prefix of bools picks single leaves.
  auto g = jit([](const Layer& l, const Array& x) { return l.w + l.b + x; },
               {.donate = {{{"w", false}, {"b", true}}, false}});
  Layer k{device_put(ones({8}), P("X")), device_put(ones({8}), P("X"))};
  EXPECT_EQ(vals(g(k, x))[0], 3.f);
  EXPECT_EQ(vals(k.w)[0], 1.f);
  EXPECT_HAS(error_of<ValueError>([&] { vals(k.b); }), "donated");
  auto h = jit([](const Array& x) { return x; }, {.donate_argnums = {1}});
  EXPECT_HAS(error_of<ValueError>([&] { h(x); }),
             "donate_argnums names argument 1 of jit of `fn`. Got 1 positional arguments");
}

TEST_F(TreeJit, EmptyHandlesAreNamed) {
  auto f = jit([](const Layer& l) { return l.w; });
  EXPECT_HAS(error_of<ValueError>([&] {
               f(Layer{iota({4}), Array()});
             }),
             "[jit] argument leaf args[0].b is an empty Array handle");
  EXPECT_HAS(error_of<ValueError>([&] {
               shard(Layer{iota({4}), Array()}, P(), "layer");
             }),
             "[shard] leaf 'layer.b' is an empty Array handle");
  auto g = jit([](const Array& x) { return std::make_pair(x, Array()); });
  EXPECT_HAS(error_of<ValueError>([&] { g(iota({4})); }),
             "[jit] result leaf result[1] of jit of `fn` is an empty Array handle");
}

TEST_F(TreeJit, NestedJitOverTrees) {
  auto inner = jit([](const Layer& l) { return Layer{l.w * 2.0, l.b + 1.0}; }, {.name = "inner"});
  auto outer = jit([&](const Layer& l) {
    Layer a = inner(l);
    Layer b = inner(a);
    return b.w + b.b;
  });
  Layer l{device_put(arange(8.f), P("X")), device_put(zeros({8}), P("X"))};
  EXPECT_EQ(vals(outer(l))[3], 14.f);
  EXPECT_HAS(outer.lower(l).as_text(), "jit[name=inner");
}

TEST_F(TreeJit, DevicePutAndShardOverTrees) {
  Params p = make_params();
  p.layers = {Layer{iota({8, 2}), iota({8})}};
  p.extra = {{"a", iota({4, 4})}};
  p.scale = scalar(2.f);
  // One placement per leaf from a prefix; statics pass through.
  Params q =
      device_put(p, tree::Prefix<Placement>{{"layers", P("X")}, {"extra", P("Y")}, {"scale", P()}});
  EXPECT_EQ(typeof(q.layers[0].w).str(), "f32[8@X,2]");
  EXPECT_EQ(typeof(q.extra.at("a")).str(), "f32[4@Y,4]");
  EXPECT_EQ(q.sizes, p.sizes);
  // shard with one placement, then with a policy.
  Params r = shard(q, P());
  EXPECT_EQ(typeof(r.layers[0].w).str(), "f32[8,2]");
  Params s = shard(p, batch_sharding("X"));
  EXPECT_EQ(typeof(s.layers[0].b).str(), "f32[8@X]");
  EXPECT_EQ(typeof(*s.scale).str(), "f32[]");
  EXPECT_EQ(vals(s.extra.at("a")), vals(p.extra.at("a")));
  // A leaf that cannot take the placement is named.
  std::string e = error_of<ValueError>([&] { shard(p, P("X"), "params"); });
  EXPECT_HAS(e, "[shard] leaf 'params.scale' (f32[]) cannot take P('X',)");
  e = error_of<ValueError>([&] { device_put(p, P(nullptr, "X")); });
  EXPECT_HAS(e, "[device_put] leaf 'layers[0].b' (f32[8]) cannot take P(None, 'X')");
  // std::vector<Array> is a tree too.
  std::vector<Array> v = device_put(std::vector<Array>{iota({8}), iota({16})}, P("X"));
  EXPECT_EQ(typeof(v[1]).str(), "f32[16@X]");
}

}  // namespace
