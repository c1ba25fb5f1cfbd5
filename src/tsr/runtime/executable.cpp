#include "tsr/runtime/executable.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "tsr/comm/process.h"
#include "tsr/core/array_impl.h"
#include "tsr/core/primitive.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/common.h"
#include "tsr/prims/control_flow.h"
#include "tsr/prims/reduction.h"
#include "tsr/prims/shard_map.h"
#include "tsr/runtime/fusion.h"
#include "tsr/runtime/step_trace.h"
#include "tsr/runtime/timeline.h"
#include "tsr/sharding/propagate.h"

namespace tsr::detail {
namespace {

NamedSharding layout_on(const Mesh& m, const PartitionSpec& spec, int rank) {
  return NamedSharding(m, spec.normalized(rank));
}

Shape origin_of(const NamedSharding& s, int flat, const Shape& shape) {
  ShardIndex idx = s.index_of(flat, shape);
  Shape o(idx.size());
  for (size_t d = 0; d < idx.size(); ++d) o[d] = idx[d].start;
  return o;
}

void schedule(Executable& ex);

// Turns a global Program into steps on concrete layouts.
struct Lowerer {
  Executable& ex;
  Mesh mesh;  // the program's mesh
  std::unordered_map<const Var*, int> val;
  std::vector<Mesh> known;  // concrete meshes met so far (inputs, placements, renamings)
  const AutoLayouts* chosen = nullptr;  // the Auto pass's layouts, on meshes with Auto axes

  // `m` with every axis Explicit (same devices), for partial results over Auto axes.
  const Mesh& explicit_twin(const Mesh& m) {
    std::vector<AxisType> types(m.axis_sizes().size(), AxisType::Explicit);
    Mesh t(m.devices(), m.axis_sizes(), m.axis_names(), types);
    for (const Mesh& k : known)
      if (k == t) return k;
    return known.emplace_back(std::move(t));
  }

  // The layout of value v: what the Auto pass chose, else its type's spec.
  const PartitionSpec& spec_of_var(const Var& v) const {
    if (chosen) {
      auto it = chosen->var.find(&v);
      if (it != chosen->var.end()) return it->second;
    }
    return v.type.sharding.spec();
  }

  // The devices of an abstract mesh: a concrete mesh already met with that
  // abstract mesh, else the context mesh, else the program's devices under the new
  // names (a renamed mesh or use_abstract_mesh: same devices, same order).
  const Mesh& mesh_for(const AbstractMesh& am) {
    if (am.empty() || am == mesh.abstract_mesh()) return mesh;
    for (const Mesh& m : known)
      if (m.abstract_mesh() == am) return m;
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == am) return known.emplace_back(ctx);
    if (am.size() == mesh.size())
      return known.emplace_back(
          Mesh(mesh.devices(), am.axis_sizes(), am.axis_names(), am.axis_types()));
    throw ValueError("[jit] no devices for " + am.str() + ". Got a program on " + mesh.str() +
                     " (" + std::to_string(mesh.size()) + " devices); expected a mesh of " +
                     std::to_string(am.size()) +
                     " devices. Reshard onto a NamedSharding built from a concrete Mesh, or call "
                     "under MeshScope(mesh).");
  }
  // The abstract mesh an equation computes on: its first typed output's, else input's.
  static AbstractMesh eqn_mesh(const Eqn& e) {
    for (const auto& v : e.outs)
      if (!v->type.sharding.mesh().empty()) return v->type.sharding.mesh();
    for (const auto& v : e.ins)
      if (!v->type.sharding.mesh().empty()) return v->type.sharding.mesh();
    return AbstractMesh();
  }
  std::map<std::pair<int, size_t>, std::vector<std::pair<NamedSharding, int>>> resharded;
  // Why the next reshards happen (the comm report), and whether the program wrote them.
  std::string cause = "a program input";
  bool implicit = true;
  void because(std::string why, bool inserted) {
    cause = std::move(why);
    implicit = inserted;
  }

  int add_value(const Shape& shape, DType dtype, bool weak, const NamedSharding& layout) {
    Executable::Value v;
    v.shape = shape;
    v.dtype = dtype;
    v.weak = weak;
    v.layout = layout;
    v.local_bytes = static_cast<size_t>(numel(layout.shard_shape(shape))) * itemsize(dtype);
    ex.values.push_back(std::move(v));
    return static_cast<int>(ex.values.size()) - 1;
  }

  // The value v laid out as `to` (a reshard step, shared by every use).
  int reshard(int v, const NamedSharding& to) {
    const auto& src = ex.values[v];
    if (src.layout == to) return v;
    auto& seen = resharded[{v, to.hash()}];
    for (const auto& [s, id] : seen)
      if (s == to) return id;
    Executable::Value copy = src;  // the push_back below may move src
    int out = add_value(copy.shape, copy.dtype, copy.weak, to);
    Executable::Step st;
    st.plan = get_plan(copy.shape, copy.dtype, copy.layout, to);
    st.cause = cause;
    st.implicit = implicit;
    st.ins = {v};
    st.outs = {out};
    ex.steps.push_back(std::move(st));
    seen.emplace_back(to, out);
    return out;
  }

  void lower_program(const Program& p) {
    for (const Eqn& e : p.eqns) lower_eqn(e);
  }

  // A step on `m` making `to` share `from`'s buffer (see Step::alias).
  void alias(int from, int to, const Mesh& m) {
    Executable::Step st;
    st.alias = true;
    st.ins = {from};
    st.outs = {to};
    st.mesh = m;
    ex.steps.push_back(std::move(st));
  }

  // shard_map: each input's block becomes the body's value on the same buffer, the
  // body is lowered on the mesh with the manual axes typed Manual (every device holds
  // its whole block), and each output block becomes a block of the global result.
  void lower_shard_map(const Eqn& e, const prim::ShardMap& sm) {
    const Mesh outer = sm.mesh();
    known.push_back(outer);
    const Program& body = sm.body();
    AbstractMesh inner_am = outer.abstract_mesh();
    {
      std::vector<std::pair<std::string, AxisType>> u;
      for (const auto& a : sm.manual()) u.emplace_back(a, AxisType::Manual);
      inner_am = inner_am.update_axis_types(u);
    }
    // The body runs on the shard_map's own devices (not whatever mesh of that shape the
    // program met first: a jit of a pmap on host arrays has a one-device program mesh).
    const Mesh inner(outer.devices(), inner_am.axis_sizes(), inner_am.axis_names(),
                     inner_am.axis_types());
    known.insert(known.begin(), inner);  // found first by the body's equations
    for (size_t i = 0; i < e.ins.size(); ++i) {
      because("shard_map in_specs", false);
      const ArrayType& t = e.ins[i]->type;
      const ArrayType& bt = body.in_vars[i]->type;
      int v = reshard(val.at(e.ins[i].get()),
                      layout_on(outer, prim::ShardMap::outer_spec(sm.in_specs()[i], bt), t.ndim()));
      int w =
          add_value(bt.shape, bt.dtype, bt.weak, layout_on(inner, bt.sharding.spec(), bt.ndim()));
      alias(v, w, inner);
      val[body.in_vars[i].get()] = w;
    }
    lower_program(body);
    for (size_t j = 0; j < e.outs.size(); ++j) {
      because("shard_map out_specs", false);
      const ArrayType& bt = body.out_vars[j]->type;
      int w =
          reshard(val.at(body.out_vars[j].get()), layout_on(inner, bt.sharding.spec(), bt.ndim()));
      const ArrayType& t = e.outs[j]->type;
      int o =
          add_value(t.shape, t.dtype, t.weak,
                    layout_on(outer, prim::ShardMap::outer_spec(sm.out_specs()[j], bt), t.ndim()));
      alias(w, o, outer);
      // On Auto axes the pass keeps the out_specs layout (no gather to the type's).
      val[e.outs[j].get()] = reshard(o, layout_on(outer, spec_of_var(*e.outs[j]), t.ndim()));
    }
  }

  // A collective of a shard_map body, on the body's mesh `m`: one comm step whose
  // group per device is the devices agreeing on every coordinate but the named axes
  // (and, with axis_index_groups, whose combined index is in the same listed group).
  void lower_collective(const Eqn& e, const Mesh& m) {
    using K = prim::Collective::Kind;
    using C = Executable::Step::Coll;
    const auto* c = dynamic_cast<const prim::Collective*>(e.prim.get());
    const auto* lc = dynamic_cast<const prim::LayoutCollective*>(e.prim.get());
    if (c && c->kind() == K::Pvary) {  // a type cast: the same buffer
      val[e.outs[0].get()] = val.at(e.ins[0].get());
      return;
    }
    const ArrayType& t = e.outs[0]->type;
    Executable::Step st;
    st.prim = e.prim;
    st.mesh = m;
    st.cause = e.prim->name();
    because(std::string("operand 0 of ") + e.prim->name(), true);
    const std::vector<std::string>& axes = c ? c->axes() : lc->p().axes;
    // Elementwise collectives keep the value's layout along the non-manual axes (partial
    // manual): group members share those coordinates, so their local blocks line up.
    // The others work on whole blocks.
    const bool keep = ((c && c->kind() != K::AxisIndex) ||
                       (lc && (lc->p().kind == prim::LayoutCollective::Kind::Ppermute ||
                               lc->p().kind == prim::LayoutCollective::Kind::Pbroadcast))) &&
                      !e.ins.empty() && e.ins[0]->type.sharding.spec().unreduced().empty() &&
                      t.sharding.spec().unreduced().empty();
    const PartitionSpec in_spec = keep ? e.ins[0]->type.sharding.spec() : PartitionSpec();
    const PartitionSpec out_spec = keep ? t.sharding.spec() : PartitionSpec();
    const AxisIndexGroups& groups = c ? c->groups() : lc->p().groups;
    int64_t n_all = 1;  // the combined size of the named axes
    for (const auto& a : axes) n_all *= m.abstract_mesh().axis_size(a);
    // With axis_index_groups each index's group and its rank in it (the list order).
    const std::vector<std::pair<int, int>> at = prim::group_positions(groups, n_all);
    const int64_t n = groups.empty() ? n_all : static_cast<int64_t>(groups[0].size());
    if (c) {
      st.reduce_op = c->op();
      st.coll = c->kind() == K::AxisIndex ? C::AxisIndex : C::AllReduce;
    } else {
      static const C kind_of[] = {C::AllGather, C::ReduceScatter, C::Permute, C::AllToAll,
                                  C::Broadcast};
      st.coll = kind_of[static_cast<int>(lc->p().kind)];
      st.perm = lc->p().perm;
      st.root = lc->p().source;
      st.run =
          prim::collective_run(*lc, NamedSharding(m, in_spec).shard_shape(e.ins[0]->type.shape), n);
    }
    if (!e.ins.empty()) {
      const ArrayType& it = e.ins[0]->type;
      st.ins.push_back(reshard(val.at(e.ins[0].get()), layout_on(m, in_spec, it.ndim())));
    }
    int out = add_value(t.shape, t.dtype, t.weak, layout_on(m, out_spec, t.ndim()));
    st.outs.push_back(out);
    // Coordinates along each mesh axis of each flat (row-major) position.
    const auto& sizes = m.axis_sizes();
    const auto& mnames = m.axis_names();
    auto coord = [&](int f, int axis) {
      int stride = 1;
      for (int a = static_cast<int>(sizes.size()) - 1; a > axis; --a) stride *= sizes[a];
      return (f / stride) % sizes[axis];
    };
    std::vector<int> named;
    for (const auto& a : axes)
      named.push_back(
          static_cast<int>(std::find(mnames.begin(), mnames.end(), a) - mnames.begin()));
    auto index_in_group = [&](int f) {
      int r = 0;
      for (int a : named) r = r * sizes[a] + coord(f, a);
      return r;
    };
    for (int f = 0; f < m.size(); ++f) {
      if (st.coll == C::AxisIndex) {
        st.coll_rank.push_back(index_in_group(f));
        continue;
      }
      const auto [grp, rank] = at[static_cast<size_t>(index_in_group(f))];
      st.coll_rank.push_back(rank);
      std::vector<std::pair<int, int>> members;  // (rank, device id)
      for (int g = 0; g < m.size(); ++g) {
        bool same = at[static_cast<size_t>(index_in_group(g))].first == grp;
        for (int a = 0; a < static_cast<int>(sizes.size()); ++a)
          if (std::find(named.begin(), named.end(), a) == named.end() && coord(g, a) != coord(f, a))
            same = false;
        if (same)
          members.emplace_back(at[static_cast<size_t>(index_in_group(g))].second,
                               detail::slot(m.devices()[g]));
      }
      std::sort(members.begin(), members.end());
      std::vector<int> ids;
      for (const auto& mb : members) ids.push_back(mb.second);
      st.coll_ids.push_back(std::move(ids));
    }
    ex.steps.push_back(std::move(st));
    because(std::string("result of ") + e.prim->name(), true);
    val[e.outs[0].get()] = reshard(out, layout_on(m, t.sharding.spec(), t.ndim()));
  }

  // A closed body lowered on this program's meshes with its inputs at the given layouts
  // and its outputs at `out_layouts` where set (else where the body leaves them: its
  // types' layouts, or on Auto axes what the propagation pass chose for the body).
  std::shared_ptr<const Executable> lower_sub(
      const Program& p, const Mesh& on, const std::vector<NamedSharding>& in_layouts,
      const std::vector<std::optional<NamedSharding>>& out_layouts) {
    auto sub = std::make_shared<Executable>();
    Lowerer lw{*sub, mesh, {}, known, nullptr, {}};
    for (size_t i = 0; i < p.in_vars.size(); ++i) {
      const ArrayType& t = p.in_vars[i]->type;
      int v = lw.add_value(t.shape, t.dtype, t.weak, in_layouts[i]);
      sub->inputs.push_back(v);
      lw.val[p.in_vars[i].get()] = v;
    }
    std::unique_ptr<AutoLayouts> picked =
        propagate_auto(p, on.abstract_mesh(), in_layouts, out_layouts);
    lw.chosen = picked.get();
    lw.lower_program(p);
    lw.because("a body's output layout", true);
    for (size_t o = 0; o < p.out_vars.size(); ++o) {
      int v = lw.val.at(p.out_vars[o].get());
      sub->outputs.push_back(out_layouts[o] ? lw.reshard(v, *out_layouts[o]) : v);
    }
    schedule(*sub);
    return sub;
  }

  // The layout a control-flow operand keeps: where it is (on Auto axes, what the pass
  // chose), else its type's on `me`; xs keep dim 0 unsharded (slices are contiguous).
  NamedSharding operand_layout(int v, const ArrayType& t, const Mesh& me, bool xs) {
    const NamedSharding& cur = ex.values[static_cast<size_t>(v)].layout;
    if (!cur.concrete_mesh() || !(*cur.concrete_mesh() == me) ||
        cur.spec().unreduced() != t.sharding.spec().unreduced())
      return layout_on(me, t.sharding.spec(), t.ndim());
    if (!xs) return cur;
    std::vector<PartitionEntry> e = cur.spec().entries();
    e[0] = PartitionEntry();
    return layout_on(me, with_sets_of(e, cur.spec()), t.ndim());
  }

  static NamedSharding drop_dim0(const NamedSharding& l) {
    std::vector<PartitionEntry> e = l.spec().entries();
    e.erase(e.begin());
    return NamedSharding(*l.concrete_mesh(), with_sets_of(e, l.spec()));
  }

  static NamedSharding add_dim0(const NamedSharding& l) {
    std::vector<PartitionEntry> e = l.spec().entries();
    e.insert(e.begin(), PartitionEntry());
    return NamedSharding(*l.concrete_mesh(), with_sets_of(e, l.spec()));
  }

  // cond / while / scan: one step holding the bodies lowered at the operands' layouts;
  // carries keep their layout across iterations (the loop itself never gathers).
  void lower_control(const Eqn& e) {
    using K = Executable::Control::Kind;
    using Opt = std::vector<std::optional<NamedSharding>>;
    const Mesh me = mesh_for(eqn_mesh(e));
    auto ctl = std::make_shared<Executable::Control>();
    Executable::Step st;
    st.prim = e.prim;
    st.mesh = me;
    const auto* sc = dynamic_cast<const prim::Scan*>(e.prim.get());
    const size_t first_x = sc ? sc->n_consts() + sc->n_carry() : e.ins.size();
    std::vector<NamedSharding> lay;
    for (size_t i = 0; i < e.ins.size(); ++i) {
      because("operand " + std::to_string(i) + " of " + e.prim->name(), true);
      const ArrayType& t = e.ins[i]->type;
      int v = val.at(e.ins[i].get());
      int id = reshard(v, operand_layout(v, t, me, i >= first_x));
      st.ins.push_back(id);
      lay.push_back(ex.values[static_cast<size_t>(id)].layout);
    }
    auto part = [](const std::vector<NamedSharding>& l, size_t a, size_t b) {
      return std::vector<NamedSharding>(l.begin() + static_cast<long>(a),
                                        l.begin() + static_cast<long>(b));
    };
    auto opt = [](const std::vector<NamedSharding>& l) { return Opt(l.begin(), l.end()); };
    auto outs_of = [](const Executable& sub) {
      std::vector<NamedSharding> l;
      for (int v : sub.outputs) l.push_back(sub.values[static_cast<size_t>(v)].layout);
      return l;
    };
    std::vector<NamedSharding> out_lay;
    if (const auto* c = dynamic_cast<const prim::Cond*>(e.prim.get())) {
      ctl->kind = K::Cond;
      // Every branch writes its outputs where the first one leaves them.
      ctl->subs.push_back(
          lower_sub(*c->branches()[0], me, part(lay, 1, lay.size()), Opt(e.outs.size())));
      out_lay = outs_of(*ctl->subs[0]);
      for (size_t b = 1; b < c->branches().size(); ++b)
        ctl->subs.push_back(
            lower_sub(*c->branches()[b], me, part(lay, 1, lay.size()), opt(out_lay)));
    } else if (const auto* w = dynamic_cast<const prim::While*>(e.prim.get())) {
      ctl->kind = K::While;
      ctl->n_consts = w->n_cond_consts();
      ctl->n_consts2 = w->n_body_consts();
      ctl->n_carry = e.outs.size();
      const size_t nb = ctl->n_consts + ctl->n_consts2;
      std::vector<NamedSharding> cin = part(lay, 0, ctl->n_consts);
      std::vector<NamedSharding> carry = part(lay, nb, lay.size());
      cin.insert(cin.end(), carry.begin(), carry.end());
      const ArrayType& pt = w->cond().out_vars[0]->type;
      ctl->subs.push_back(lower_sub(w->cond(), me, cin, {layout_on(me, pt.sharding.spec(), 0)}));
      ctl->subs.push_back(
          lower_sub(w->body(), me, part(lay, ctl->n_consts, lay.size()), opt(carry)));
      out_lay = carry;
    } else {
      ctl->kind = K::Scan;
      ctl->n_consts = sc->n_consts();
      ctl->n_carry = sc->n_carry();
      ctl->length = sc->length();
      ctl->reverse = sc->reverse();
      std::vector<NamedSharding> in = part(lay, 0, first_x);
      for (size_t i = first_x; i < e.ins.size(); ++i) {
        in.push_back(drop_dim0(lay[i]));
        const Executable::Value& xv = ex.values[static_cast<size_t>(st.ins[i])];
        ctl->x_bytes.push_back(sc->length() ? xv.local_bytes / static_cast<size_t>(sc->length())
                                            : 0);
      }
      out_lay = part(lay, ctl->n_consts, first_x);
      Opt out = opt(out_lay);
      out.resize(e.outs.size());
      ctl->subs.push_back(lower_sub(sc->body(), me, in, out));
      std::vector<NamedSharding> got = outs_of(*ctl->subs[0]);
      for (size_t j = ctl->n_carry; j < e.outs.size(); ++j) out_lay.push_back(add_dim0(got[j]));
    }
    for (size_t j = 0; j < e.outs.size(); ++j) {
      const ArrayType& t = e.outs[j]->type;
      int v = add_value(t.shape, t.dtype, t.weak, out_lay[j]);
      st.outs.push_back(v);
      if (ctl->kind == K::Scan && j >= ctl->n_carry)
        ctl->y_bytes.push_back(
            ctl->length ? ex.values[v].local_bytes / static_cast<size_t>(ctl->length) : 0);
    }
    ctl->n_groups.assign(static_cast<size_t>(me.size()), 0);
    for (const auto& sub : ctl->subs) {
      std::vector<int> at(static_cast<size_t>(me.size()), -1);
      for (int f = 0; f < me.size(); ++f)
        for (size_t d = 0; d < sub->devs.size(); ++d)
          if (sub->devs[d].dev == detail::slot(me.devices()[f])) {
            at[static_cast<size_t>(f)] = static_cast<int>(d);
            ctl->n_groups[static_cast<size_t>(f)] += sub->devs[d].groups.size();
          }
      ctl->sub_dev.push_back(std::move(at));
    }
    st.ctl = std::move(ctl);
    std::vector<int> outs = st.outs;
    ex.steps.push_back(std::move(st));
    for (size_t j = 0; j < e.outs.size(); ++j) val[e.outs[j].get()] = outs[j];
  }

  void lower_eqn(const Eqn& e) {
    if (dynamic_cast<const prim::Cond*>(e.prim.get()) ||
        dynamic_cast<const prim::While*>(e.prim.get()) ||
        dynamic_cast<const prim::Scan*>(e.prim.get())) {
      lower_control(e);
      return;
    }
    if (const auto* sm = dynamic_cast<const prim::ShardMap*>(e.prim.get())) {
      lower_shard_map(e, *sm);
      return;
    }
    if (dynamic_cast<const prim::Collective*>(e.prim.get()) ||
        dynamic_cast<const prim::LayoutCollective*>(e.prim.get())) {
      lower_collective(e, mesh_for(eqn_mesh(e)));
      return;
    }
    if (const Program* sub = e.prim->subprogram()) {
      // Inline a nested jit: its inputs are the equation's inputs, in order.
      size_t k = 0;
      for (const auto& v : sub->const_vars) val[v.get()] = val.at(e.ins[k++].get());
      for (const auto& v : sub->in_vars) val[v.get()] = val.at(e.ins[k++].get());
      lower_program(*sub);
      for (size_t j = 0; j < e.outs.size(); ++j) {
        because("result " + std::to_string(j) + " of a nested jit", true);
        const ArrayType& t = e.outs[j]->type;
        val[e.outs[j].get()] =
            reshard(val.at(sub->out_vars[j].get()),
                    layout_on(mesh_for(t.sharding.mesh()), spec_of_var(*e.outs[j]), t.ndim()));
      }
      return;
    }
    if (const Mesh* pm = e.prim->placement_mesh()) {
      bool seen = false;
      for (const Mesh& m : known) seen = seen || m == *pm;
      if (!seen) known.push_back(*pm);
    }
    // A copy: `known` may grow (and move its elements) while this equation lowers.
    const Mesh me = e.prim->placement_mesh() ? *e.prim->placement_mesh() : mesh_for(eqn_mesh(e));
    if (std::string_view(e.prim->name()) == "reshard" ||
        std::string_view(e.prim->name()) == "sharding_constraint") {
      // A pure layout change: one reshard step, no kernel.
      because("reshard", false);
      const ArrayType& t = e.outs[0]->type;
      val[e.outs[0].get()] =
          reshard(val.at(e.ins[0].get()), layout_on(me, spec_of_var(*e.outs[0]), t.ndim()));
      return;
    }
    std::vector<ArrayType> in_t, out_t;
    for (const auto& v : e.ins) in_t.push_back(v->type);
    for (const auto& v : e.outs) out_t.push_back(v->type);
    // On Auto axes the kernel is partitioned by the layout types the pass chose.
    auto picked = chosen ? chosen->eqn.find(&e) : decltype(chosen->eqn)::const_iterator();
    const bool use_pick = chosen && picked != chosen->eqn.end();
    Lowering l = e.prim->partition(use_pick ? picked->second.in : in_t,
                                   use_pick ? picked->second.out : out_t);
    Executable::Step st;
    st.prim = e.prim;
    const char* backend = backend_name(me.devices());  // the mesh's platform
    st.fn = find_kernel(e.prim->name(), backend);
    {
      std::vector<DType> dts;
      std::vector<int> ranks;
      for (const auto* ts : {&in_t, &out_t})
        for (const ArrayType& t : *ts) {
          dts.push_back(t.dtype);
          ranks.push_back(static_cast<int>(t.ndim()));
        }
      check_kernel_caps(e.prim->name(), backend, dts, ranks);
    }
    st.mesh = me;
    for (size_t i = 0; i < e.ins.size(); ++i) {
      because("operand " + std::to_string(i) + " of " + e.prim->name(), true);
      int v = reshard(val.at(e.ins[i].get()), layout_on(me, l.in[i], in_t[i].ndim()));
      st.ins.push_back(v);
      st.in_local.push_back({ex.values[v].layout.shard_shape(in_t[i].shape), in_t[i].dtype});
    }
    std::vector<int> outs;
    for (size_t j = 0; j < e.outs.size(); ++j) {
      const ArrayType& t = out_t[j];
      // A partial result over an Auto axis (the pass's row-parallel dot) lives on the
      // same devices with that axis typed Explicit: concrete unreduced sets name only
      // Explicit axes.
      bool partial_auto = false;
      for (const auto& a : l.out[j].unreduced())
        partial_auto = partial_auto || me.abstract_mesh().axis_type(a) != AxisType::Explicit;
      const Mesh& om = partial_auto ? explicit_twin(me) : me;
      int v = add_value(t.shape, t.dtype, t.weak, layout_on(om, l.out[j], t.ndim()));
      st.outs.push_back(v);
      st.out_local.push_back({ex.values[v].layout.shard_shape(t.shape), t.dtype});
    }
    if (!out_t.empty())
      for (int f = 0; f < me.size(); ++f)
        st.origins.push_back(origin_of(ex.values[st.outs[0]].layout, f, out_t[0].shape));
    if (e.prim->needs_input_origins()) {
      for (const auto& t : in_t) st.in_global.push_back(t.shape);
      for (int f = 0; f < me.size(); ++f) {
        std::vector<Shape> o;
        for (size_t i = 0; i < st.ins.size(); ++i)
          o.push_back(origin_of(ex.values[st.ins[i]].layout, f, in_t[i].shape));
        st.in_origins.push_back(std::move(o));
      }
    }
    // A reduction whose reduced dims all have local extent 1 (sharded as many ways as
    // they are long) leaves each block's bytes as they are: its result shares the
    // operand's buffer, so the all_reduce after it reads the operand in one pass instead
    // of after a copy.
    if (dynamic_cast<const prim::Reduce*>(e.prim.get()) &&
        numel(st.in_local[0].shape) == numel(st.out_local[0].shape)) {
      st.alias = true;
      st.fn = nullptr;
    }
    outs = st.outs;
    ex.steps.push_back(std::move(st));
    for (size_t j = 0; j < e.outs.size(); ++j) {
      because(
          (e.outs.size() > 1 ? "result " + std::to_string(j) + " of " : std::string("result of ")) +
              e.prim->name(),
          true);
      const ArrayType& t = out_t[j];
      val[e.outs[j].get()] = reshard(outs[j], layout_on(me, spec_of_var(*e.outs[j]), t.ndim()));
    }
  }
};

// The program's mesh: the first input on a typed mesh, else the context mesh,
// else the first input's devices, else device 0.
Mesh pick_mesh(const Program& p, const std::vector<NamedSharding>& in_layouts) {
  std::vector<ArrayType> in_t = p.in_types();
  for (size_t i = 0; i < in_layouts.size(); ++i)
    if (!in_t[i].sharding.mesh().empty()) return *in_layouts[i].concrete_mesh();
  Mesh ctx = get_mesh();
  if (!ctx.empty()) return ctx;
  if (!in_layouts.empty()) return *in_layouts[0].concrete_mesh();
  for (const Eqn& e : p.eqns)
    if (e.prim->placement_mesh()) return *e.prim->placement_mesh();
  return device_mesh(local_devices()[0]);
}

std::string platform_name(Platform p) { return p == Platform::CUDA ? "cuda" : "cpu"; }

// pick_mesh's mesh, after checking that every input sits on its platform: a program
// runs one backend's kernels, and moving data between platforms is device_put's job.
Mesh choose_mesh(const Program& p, const std::vector<NamedSharding>& in_layouts) {
  Mesh m = pick_mesh(p, in_layouts);
  if (m.empty()) return m;
  const Device& at = m.devices()[0];
  for (size_t i = 0; i < in_layouts.size(); ++i) {
    const auto& im = in_layouts[i].concrete_mesh();
    if (!im || im->empty()) continue;
    // A value on the default device alone was made without a placement (JAX's
    // uncommitted arrays): it moves to wherever the program runs.
    if (im->size() == 1 && im->devices()[0] == local_devices()[0]) continue;
    const Device& d = im->devices()[0];
    if (d.platform == at.platform) continue;
    throw ValueError("[jit] the inputs are on different platforms. Got input " + std::to_string(i) +
                     " on " + d.str() + " (" + platform_name(d.platform) +
                     ") while the program runs on " + at.str() + " (" + platform_name(at.platform) +
                     "); expected every input on one platform. Move the input with "
                     "tsr::device_put(x, tsr::NamedSharding(mesh, spec)) onto a mesh of the "
                     "program's platform first.");
  }
  return m;
}

}  // namespace

namespace {

// With several processes, the text every process compares before the first run: the
// input and output layouts, then the program, one line each, so a difference names
// its line. Only executables on devices of more than one process need it.
void record_fingerprint(Executable& ex, const Program& p,
                        const std::vector<NamedSharding>& in_layouts,
                        const std::vector<std::optional<NamedSharding>>& out_layouts) {
  auto& rt = Runtime::get();
  if (rt.process_count() == 1) return;
  std::set<int> procs;
  for (const auto& dr : ex.devs) procs.insert(dr.dev / rt.local_count());
  // Only the processes that run it compare it; one without a device here runs nothing.
  if (procs.size() < 2 || !procs.count(rt.process_index())) return;
  ex.processes.assign(procs.begin(), procs.end());
  std::ostringstream os;
  // The devices first: a program without inputs (a creation on a context mesh) prints
  // the same on any mesh of that shape, and agreement is remembered by this text.
  std::set<int> devs;
  for (const auto& dr : ex.devs) devs.insert(dr.dev);
  os << "devices:";
  for (int d : devs) os << ' ' << d;
  os << '\n';
  for (size_t i = 0; i < in_layouts.size(); ++i) {
    os << "input " << i << ": " << in_layouts[i].str() << " on";
    for (const auto& d : in_layouts[i].concrete_mesh()->devices()) os << ' ' << detail::slot(d);
    os << '\n';
  }
  for (size_t o = 0; o < out_layouts.size(); ++o)
    if (out_layouts[o]) os << "output " << o << ": " << out_layouts[o]->str() << '\n';
  os << p.str();
  ex.fingerprint = os.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

}  // namespace

void check_same_text(const std::vector<int>& processes, const std::string& text, const char* op) {
  // Agreement is remembered by content, not per executable: a cache that evicted and
  // re-lowered a program on one process only must not make it wait for the others.
  static std::mutex mu;
  static std::set<size_t> agreed;
  const size_t h = std::hash<std::string>()(text);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (agreed.count(h)) return;
  }
  auto texts = process_allgather(processes, text, op);
  const int me = Runtime::get().process_index();
  for (size_t k = 0; k < texts.size(); ++k) {
    if (texts[k] == text) continue;
    auto mine = lines_of(text), theirs = lines_of(texts[k]);
    size_t i = 0;
    while (i < mine.size() && i < theirs.size() && mine[i] == theirs[i]) ++i;
    auto line = [](const std::vector<std::string>& ls, size_t i) {
      return i < ls.size() ? "`" + ls[i] + "`" : std::string("(the program ends)");
    };
    // Every process reports the pair (lowest differing process, this one) the same way.
    const int other = processes[k];
    throw CommError(std::string("[") + op + "] processes lowered different programs: process " +
                    std::to_string(std::min(me, other)) + " and process " +
                    std::to_string(std::max(me, other)) + " differ at line " +
                    std::to_string(i + 1) + ". Got " + line(mine, i) + " on process " +
                    std::to_string(me) + " and " + line(theirs, i) + " on process " +
                    std::to_string(other) +
                    "; expected the same program, shapes and shardings on every process. "
                    "Every process must trace the same code on the same global shapes (a "
                    "value read from process-local data must not change the program).");
  }
  std::lock_guard<std::mutex> lock(mu);
  agreed.insert(h);
}

void check_same_program(const Executable& ex) {
  check_same_text(ex.processes, ex.fingerprint, "jit");
}

std::shared_ptr<const Executable> lower(
    const Program& p, const std::vector<NamedSharding>& in_layouts,
    const std::vector<std::optional<NamedSharding>>& out_layouts) {
  auto ex = std::make_shared<Executable>();
  Lowerer lw{*ex, choose_mesh(p, in_layouts), {}, {}, nullptr, {}};
  for (const auto& l : in_layouts)
    if (l.concrete_mesh() && !l.concrete_mesh()->empty()) {
      bool seen = false;
      for (const Mesh& m : lw.known) seen = seen || m == *l.concrete_mesh();
      if (!seen) lw.known.push_back(*l.concrete_mesh());
    }
  // Every concrete mesh the program names (placements, shard_maps): a value may be typed
  // on one before the equation naming it runs (grad of a shard_map over host arguments
  // makes the cotangent on the shard_map's abstract mesh before the transposed one).
  std::function<void(const Program&)> meet = [&](const Program& q) {
    for (const Eqn& e : q.eqns) {
      if (const Mesh* pm = e.prim->placement_mesh()) {
        bool seen = false;
        for (const Mesh& m : lw.known) seen = seen || m == *pm;
        if (!seen) lw.known.push_back(*pm);
      }
      if (const Program* s = e.prim->subprogram()) meet(*s);
    }
  };
  meet(p);
  std::vector<ArrayType> in_t = p.in_types();
  std::vector<VarPtr> in_vars = p.const_vars;
  in_vars.insert(in_vars.end(), p.in_vars.begin(), p.in_vars.end());
  for (size_t i = 0; i < in_vars.size(); ++i) {
    int v = lw.add_value(in_t[i].shape, in_t[i].dtype, in_t[i].weak, in_layouts[i]);
    ex->inputs.push_back(v);
    lw.val[in_vars[i].get()] = v;
  }
  std::unique_ptr<AutoLayouts> chosen =
      propagate_auto(p, lw.mesh.abstract_mesh(), in_layouts, out_layouts);
  lw.chosen = chosen.get();
  lw.lower_program(p);
  for (size_t o = 0; o < p.out_vars.size(); ++o) {
    int v = lw.val.at(p.out_vars[o].get());
    if (o < out_layouts.size() && out_layouts[o]) {
      lw.because("jit out_shardings", false);
      // A layout on an abstract mesh (jit out_shardings by spec) takes that mesh's devices.
      const NamedSharding& l = *out_layouts[o];
      int rank = static_cast<int>(lw.ex.values[v].shape.size());
      v = lw.reshard(v, l.concrete_mesh() ? l.normalized(rank)
                                          : layout_on(lw.mesh_for(l.mesh()), l.spec(), rank));
    }
    ex->outputs.push_back(v);
  }
  schedule(*ex);
  // Waking a device thread costs more than a small kernel: such programs run on the
  // calling thread when their devices are idle (Executable::run).
  size_t touched = 0;
  bool plain = true;
  for (const auto& dr : ex->devs) {
    plain = plain && dr.groups.empty();
    for (const auto& [s, pos] : dr.steps) {
      const auto& st = ex->steps[static_cast<size_t>(s)];
      plain = plain && !st.ctl;
      for (int v : st.ins) touched += ex->values[static_cast<size_t>(v)].local_bytes;
      for (int v : st.outs) touched += ex->values[static_cast<size_t>(v)].local_bytes;
    }
  }
  ex->runs_inline = plain && touched <= inline_dispatch_bytes();
  record_fingerprint(*ex, p, in_layouts, out_layouts);
  return ex;
}

namespace {
// True when `pl` leaves every device's block as it is: the two layouts differ only in
// name (P('data') on a one-device mesh, a Reduced or axis-type annotation), so every
// device copies its whole block to an identical one.
bool same_blocks(const Plan& pl) {
  if (pl.kind != PlanKind::Exchange || pl.comm || pl.reduce || !(pl.src_local == pl.dst_local))
    return false;
  for (const DevicePlan& dp : pl.dev)
    if (dp.zero || dp.src_slot < 0 || dp.dst_slot < 0 || dp.local.size() != 1 ||
        !(dp.local[0].extent == pl.dst_local))
      return false;
  return true;
}

// Drops reshards that move no bytes: their uses read the source value instead. Such a
// step was a full copy whenever its source lived on (a one-device training step made
// 164 of them, 253 MiB per step), and it split the elementwise chains fusion joins. A
// program output keeps its step, so that it gets its own buffer and layout.
void forward_same_block_reshards(Executable& ex) {
  const std::set<int> outputs(ex.outputs.begin(), ex.outputs.end());
  std::vector<int> to(ex.values.size());
  for (size_t v = 0; v < to.size(); ++v) to[v] = static_cast<int>(v);
  std::vector<Executable::Step> kept;
  kept.reserve(ex.steps.size());
  for (auto& st : ex.steps) {
    for (int& v : st.ins) v = to[static_cast<size_t>(v)];
    if (st.plan && !outputs.count(st.outs[0]) && same_blocks(*st.plan)) {
      to[static_cast<size_t>(st.outs[0])] = st.ins[0];
      continue;
    }
    kept.push_back(std::move(st));
  }
  ex.steps = std::move(kept);
}

// Per-device schedules, output bookkeeping and the buffers to release after each step.
void schedule(Executable& exr) {
  forward_same_block_reshards(exr);
  fuse_elementwise(exr);
  Executable* ex = &exr;
  std::map<int, int> run_of;
  auto run_for = [&](int dev) -> Executable::DeviceRun& {
    auto it = run_of.find(dev);
    if (it == run_of.end()) {
      it = run_of.emplace(dev, static_cast<int>(ex->devs.size())).first;
      ex->devs.emplace_back();
      ex->devs.back().dev = dev;
    }
    return ex->devs[it->second];
  };
  for (int s = 0; s < static_cast<int>(ex->steps.size()); ++s) {
    const auto& st = ex->steps[s];
    if (st.plan) {
      for (int u = 0; u < static_cast<int>(st.plan->ids.size()); ++u) {
        auto& dr = run_for(st.plan->ids[u]);
        dr.steps.emplace_back(s, u);
        for (auto& g : plan_groups(*st.plan, u)) dr.groups.push_back(std::move(g));
      }
    } else if (st.coll != Executable::Step::Coll::None &&
               st.coll != Executable::Step::Coll::AxisIndex) {
      auto& rt = Runtime::get();
      for (int f = 0; f < st.mesh->size(); ++f) {
        auto& dr = run_for(detail::slot(st.mesh->devices()[f]));
        dr.steps.emplace_back(s, f);
        dr.groups.emplace_back(rt.group(st.coll_ids[f]), st.coll_rank[f]);
      }
    } else {
      for (int f = 0; f < st.mesh->size(); ++f) {
        auto& dr = run_for(detail::slot(st.mesh->devices()[f]));
        dr.steps.emplace_back(s, f);
        if (!st.ctl) continue;
        // A body's collectives: told on a failed input like the step's own (GroupSequence
        // skips them: the body runs its own sequence per iteration).
        for (size_t b = 0; b < st.ctl->subs.size(); ++b)
          if (int d = st.ctl->sub_dev[b][static_cast<size_t>(f)]; d >= 0)
            for (const auto& g : st.ctl->subs[b]->devs[static_cast<size_t>(d)].groups)
              dr.groups.push_back(g);
      }
    }
  }
  for (size_t o = 0; o < ex->outputs.size(); ++o) {
    int v = ex->outputs[o];
    auto it = std::find(ex->inputs.begin(), ex->inputs.end(), v);
    ex->out_input.push_back(it == ex->inputs.end() ? -1
                                                   : static_cast<int>(it - ex->inputs.begin()));
    ex->out_first.push_back(static_cast<int>(std::find(ex->outputs.begin(), ex->outputs.end(), v) -
                                             ex->outputs.begin()));
    const auto& val = ex->values[v];
    ArrayType t;
    t.shape = val.shape;
    t.dtype = val.dtype;
    t.weak = val.weak;
    t.sharding = type_sharding(val.layout, val.shape);
    ex->out_meta.push_back(std::make_shared<const ArrayMeta>(ArrayMeta{t, val.layout}));
    ex->out_types.push_back(std::move(t));
  }
  std::set<int> kept(ex->inputs.begin(), ex->inputs.end());
  kept.insert(ex->outputs.begin(), ex->outputs.end());
  for (auto& dr : ex->devs) {
    auto pos_in = [&](const NamedSharding& l) {
      const Mesh& m = *l.concrete_mesh();
      for (int f = 0; f < m.size(); ++f)
        if (detail::slot(m.devices()[f]) == dr.dev) return f;
      return -1;
    };
    for (int v : ex->inputs) dr.input_pos.push_back(pos_in(ex->values[v].layout));
    for (int v : ex->outputs) dr.output_pos.push_back(pos_in(ex->values[v].layout));
    // An alias target's uses keep its source's buffer alive (the source owns it).
    std::map<int, int> root;
    for (const auto& st : ex->steps)
      if (st.alias) {
        auto it = root.find(st.ins[0]);
        root[st.outs[0]] = it == root.end() ? st.ins[0] : it->second;
      }
    std::map<int, int> last;
    auto use = [&](int v, int k) {
      last[v] = k;
      auto it = root.find(v);
      if (it != root.end()) last[it->second] = k;
    };
    for (int k = 0; k < static_cast<int>(dr.steps.size()); ++k) {
      const auto& st = ex->steps[dr.steps[k].first];
      for (int v : st.ins) use(v, k);
      for (int v : st.outs) use(v, k);
    }
    dr.free_after.assign(dr.steps.size(), {});
    for (const auto& [v, k] : last)
      if (!kept.count(v)) dr.free_after[k].push_back(v);
  }
}
}  // namespace

namespace {
// A per-thread stack of reusable vectors: a device task's slot table and flags come
// from here instead of the heap (run_device nests for loop bodies, hence a stack).
template <typename T>
class Scratch {
 public:
  Scratch(size_t n, T init) {
    auto& pool = free_list();
    if (!pool.empty()) {
      v_ = std::move(pool.back());
      pool.pop_back();
    }
    v_.assign(n, init);
  }
  ~Scratch() { free_list().push_back(std::move(v_)); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::vector<T>& get() { return v_; }

 private:
  static std::vector<std::vector<T>>& free_list() {
    thread_local std::vector<std::vector<T>> pool;
    return pool;
  }
  std::vector<T> v_;
};
}  // namespace

std::vector<Array> Executable::run(const std::vector<Array>& in) const {
  auto& rt = Runtime::get();
  // Before the first run across processes, all of them agree on the program (one
  // small exchange per executable): a divergence is an error, not a hang.
  if (!processes.empty()) std::call_once(agreed, [this] { check_same_program(*this); });
  const size_t n_out = outputs.size();
  SmallVec<std::vector<BufferPtr>, 2> out_bufs;
  out_bufs.resize(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    if (out_input[o] >= 0 || out_first[o] != static_cast<int>(o)) continue;
    const Value& val = values[outputs[o]];
    const Mesh& m = *val.layout.concrete_mesh();
    out_bufs[o].reserve(static_cast<size_t>(m.size()));
    // Another process's devices hold no buffer here (null): it computes its own.
    for (const auto& d : m.devices())
      out_bufs[o].push_back(
          rt.is_local(detail::slot(d)) ? rt.alloc(detail::slot(d), val.local_bytes) : nullptr);
  }
  timeline::Scope dispatch(timeline::kCaller, "dispatch", "dispatch");
  {
    std::lock_guard<std::mutex> lock(rt.dispatch_mutex());
    bool now = runs_inline;
    for (size_t di = 0; now && di < devs.size(); ++di)
      now = !rt.is_local(devs[di].dev) || rt.stream(devs[di].dev).idle();
    if (dispatch.recording())
      dispatch.set_args("\"steps\":" + std::to_string(steps.size()) + ",\"devices\":" +
                        std::to_string(devs.size()) + ",\"inline\":" + (now ? "true" : "false"));
    for (int di = 0; di < static_cast<int>(devs.size()); ++di) {
      const DeviceRun& dr = devs[di];
      if (!rt.is_local(dr.dev)) continue;
      BufferList ins, outs;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (dr.input_pos[i] >= 0) ins.push_back(in[i].impl()->buffers[dr.input_pos[i]]);
      for (size_t o = 0; o < n_out; ++o)
        if (dr.output_pos[o] >= 0 && out_input[o] < 0 && out_first[o] == static_cast<int>(o))
          outs.push_back(out_bufs[o][dr.output_pos[o]]);
      if (now) {
        auto fn = [this, di](std::exception_ptr err, const BufferList& ins,
                             const BufferList& outs) { run_task(di, err, ins, outs); };
        run_now(ins, outs, fn);
        continue;
      }
      launch_task(dr.dev, std::move(ins), std::move(outs),
                  [self = shared_from_this(), di](std::exception_ptr err, const BufferList& ins,
                                                  const BufferList& outs) {
                    self->run_task(di, err, ins, outs);
                  });
    }
  }
  std::vector<Array> result;
  result.reserve(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    if (out_input[o] >= 0) {
      const Array& x = in[out_input[o]];
      // The input itself, unless its type is not the output's (a process-local value
      // placed on a mesh keeps its mesh-less type; the program's output has its own).
      if (x.type() == out_types[o] && x.type().sharding.mesh() == out_types[o].sharding.mesh()) {
        result.push_back(x);
        continue;
      }
      auto impl = std::make_shared<ArrayImpl>();
      impl->meta = std::make_shared<const ArrayMeta>(ArrayMeta{out_types[o], x.impl()->sharding()});
      impl->buffers = x.impl()->buffers;
      result.emplace_back(std::move(impl));
      continue;
    }
    auto impl = std::make_shared<ArrayImpl>();
    impl->meta = out_meta[o];
    impl->buffers = out_first[o] == static_cast<int>(o) ? std::move(out_bufs[o])
                                                        : result[out_first[o]].impl()->buffers;
    result.emplace_back(std::move(impl));
  }
  return result;
}

void Executable::run_task(int di, std::exception_ptr err, const BufferList& ins,
                          const BufferList& outs) const {
  const DeviceRun& dr = devs[di];
  if (err) {
    fail_groups(dr.groups, "jit", err);
    return;
  }
  Scratch<void*> scratch(values.size(), nullptr);
  std::vector<void*>& slots = scratch.get();
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (dr.input_pos[i] >= 0) slots[inputs[i]] = ins[k++]->ptr;
  k = 0;
  for (size_t o = 0; o < outputs.size(); ++o)
    if (dr.output_pos[o] >= 0 && out_input[o] < 0 && out_first[o] == static_cast<int>(o))
      slots[outputs[o]] = outs[k++]->ptr;
  run_device(di, slots);
}

namespace {
// A block-moving collective on one device: the block permutation before the Group
// call (into a temporary), the call, and the permutation after it.
void run_layout_collective(const Executable::Step& st, const Group& g, const void* in, void* out,
                           DType dt, CachingAllocator& alloc, const DeviceMemory& mem) {
  using C = Executable::Step::Coll;
  const prim::CollectiveRun& r = st.run;
  const size_t item = itemsize(dt);
  auto trivial = [](const int64_t abc[3]) { return abc[0] == 1 || abc[1] == 1; };
  const size_t total = static_cast<size_t>(r.count) * static_cast<size_t>(g.size()) * item;
  void* pre = nullptr;
  void* post = nullptr;
  if (!trivial(r.pre)) {
    pre = alloc.allocate(std::max<size_t>(total, 1));
    mem.swap_leading(in, pre, r.pre, item);
    in = pre;
  }
  void* dst = out;
  if (!trivial(r.post)) dst = post = alloc.allocate(std::max<size_t>(total, 1));
  try {
    switch (st.coll) {
      case C::AllGather:
        g.all_gather(in, dst, r.count, dt);
        break;
      case C::ReduceScatter:
        g.reduce_scatter(in, dst, r.count, dt, ReduceOp::Sum);
        break;
      case C::AllToAll:
        g.all_to_all(in, dst, r.count, dt);
        break;
      case C::Permute:
        g.permute(in, dst, r.count, dt, st.perm);
        break;
      case C::Broadcast:
        g.broadcast(in, dst, r.count, dt, st.root);
        break;
      default:
        break;
    }
    if (post) mem.swap_leading(post, out, r.post, item);
  } catch (...) {
    if (pre) alloc.release(pre, std::max<size_t>(total, 1));
    if (post) alloc.release(post, std::max<size_t>(total, 1));
    throw;
  }
  if (pre) alloc.release(pre, std::max<size_t>(total, 1));
  if (post) alloc.release(post, std::max<size_t>(total, 1));
}
}  // namespace

void Executable::run_body(int di, const std::vector<void*>& in, const std::vector<void*>& out,
                          std::vector<void*>& s, const DeviceMemory& mem) const {
  s.assign(values.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) s[static_cast<size_t>(inputs[i])] = in[i];
  for (size_t o = 0; o < outputs.size(); ++o)
    if (out_input[o] < 0 && out_first[o] == static_cast<int>(o))
      s[static_cast<size_t>(outputs[o])] = out[o];
  if (di >= 0) run_device(di, s);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const void* src = out_input[o] >= 0                     ? in[static_cast<size_t>(out_input[o])]
                      : out_first[o] != static_cast<int>(o) ? out[static_cast<size_t>(out_first[o])]
                                                            : nullptr;
    if (src && src != out[o])
      mem.copy(out[o], src, values[static_cast<size_t>(outputs[o])].local_bytes);
  }
}

namespace {
char* at_byte(void* p, size_t off) { return static_cast<char*>(p) + off; }

// A control-flow step on one device (flat position `pos`). Carries live in two buffers
// (the output and a temporary) that the iterations alternate between.
template <class Ensure>
void run_control(const Executable& ex, const Executable::Step& st, int pos,
                 std::vector<void*>& slots, Ensure&& ensure, CachingAllocator& alloc,
                 const DeviceMemory& mem) {
  using K = Executable::Control::Kind;
  const Executable::Control& c = *st.ctl;
  const size_t p = static_cast<size_t>(pos);
  auto bytes = [&](int v) {
    return std::max<size_t>(ex.values[static_cast<size_t>(v)].local_bytes, 1);
  };
  std::vector<void*> in, out, scratch;
  if (c.kind == K::Cond) {
    int32_t idx = 0;  // read back once per cond (the branch runs from the host)
    mem.read(&idx, slots[static_cast<size_t>(st.ins[0])], sizeof idx);
    const int nb = static_cast<int>(c.subs.size());
    idx = std::clamp(idx, 0, nb - 1);  // as JAX: an out-of-range index takes an end branch
    for (size_t i = 1; i < st.ins.size(); ++i) in.push_back(slots[static_cast<size_t>(st.ins[i])]);
    for (int v : st.outs) out.push_back(ensure(v));
    c.subs[static_cast<size_t>(idx)]->run_body(c.sub_dev[static_cast<size_t>(idx)][p], in, out,
                                               scratch, mem);
    return;
  }
  const size_t nk = c.n_carry;
  const size_t nconst = c.kind == K::While ? c.n_consts + c.n_consts2 : c.n_consts;
  std::vector<void*> fin(nk), tmp(nk), cur(nk);
  for (size_t k = 0; k < nk; ++k) {
    fin[k] = ensure(st.outs[k]);
    tmp[k] = alloc.allocate(bytes(st.outs[k]));
    cur[k] = slots[static_cast<size_t>(st.ins[nconst + k])];
  }
  auto release = [&] {
    for (size_t k = 0; k < nk; ++k) alloc.release(tmp[k], bytes(st.outs[k]));
  };
  try {
    if (c.kind == K::Scan) {
      const Executable& body = *c.subs[0];
      const int bd = c.sub_dev[0][p];
      const int64_t n = c.length;
      const size_t nx = st.ins.size() - nconst - nk;
      for (int64_t it = 0; it < n; ++it) {
        const size_t idx = static_cast<size_t>(c.reverse ? n - 1 - it : it);
        // The last iteration writes the output buffers.
        const bool last_parity = (n - 1 - it) % 2 == 0;
        in.clear();
        out.clear();
        for (size_t i = 0; i < nconst; ++i) in.push_back(slots[static_cast<size_t>(st.ins[i])]);
        for (size_t k = 0; k < nk; ++k) in.push_back(cur[k]);
        for (size_t i = 0; i < nx; ++i)
          in.push_back(
              at_byte(slots[static_cast<size_t>(st.ins[nconst + nk + i])], idx * c.x_bytes[i]));
        for (size_t k = 0; k < nk; ++k) out.push_back(last_parity ? fin[k] : tmp[k]);
        for (size_t j = 0; j < c.y_bytes.size(); ++j)
          out.push_back(at_byte(ensure(st.outs[nk + j]), idx * c.y_bytes[j]));
        body.run_body(bd, in, out, scratch, mem);
        for (size_t k = 0; k < nk; ++k) cur[k] = out[k];
      }
      for (size_t y = 0; y < c.y_bytes.size(); ++y) ensure(st.outs[nk + y]);
    } else {
      const Executable& cond = *c.subs[0];
      const Executable& body = *c.subs[1];
      const int cd = c.sub_dev[0][p], bd = c.sub_dev[1][p];
      // The predicate is computed into device memory and read back once per iteration.
      alignas(8) char host_pred[8] = {};
      void* pred = mem.host() ? host_pred : alloc.allocate(8);
      struct Release {
        CachingAllocator& a;
        void* p;
        bool own;
        ~Release() {
          if (own) a.release(p, 8);
        }
      } pred_owner{alloc, pred, pred != host_pred};
      for (;;) {
        in.clear();
        for (size_t i = 0; i < c.n_consts; ++i) in.push_back(slots[static_cast<size_t>(st.ins[i])]);
        for (size_t k = 0; k < nk; ++k) in.push_back(cur[k]);
        out.assign(1, pred);
        cond.run_body(cd, in, out, scratch, mem);
        if (pred != host_pred) mem.read(host_pred, pred, 1);
        if (!host_pred[0]) break;
        in.clear();
        out.clear();
        for (size_t i = c.n_consts; i < nconst; ++i)
          in.push_back(slots[static_cast<size_t>(st.ins[i])]);
        for (size_t k = 0; k < nk; ++k) {
          in.push_back(cur[k]);
          out.push_back(cur[k] == fin[k] ? tmp[k] : fin[k]);
        }
        body.run_body(bd, in, out, scratch, mem);
        cur = out;
      }
    }
    for (size_t k = 0; k < nk; ++k)
      if (cur[k] != fin[k])
        mem.copy(fin[k], cur[k], ex.values[static_cast<size_t>(st.outs[k])].local_bytes);
  } catch (...) {
    release();
    throw;
  }
  release();
}
}  // namespace

void Executable::run_device(int di, std::vector<void*>& slots) const {
  const DeviceRun& dr = devs[di];
  auto& rt = Runtime::get();
  auto& alloc = rt.allocator(dr.dev);
  const DeviceMemory mem = rt.memory(dr.dev);
  // The inline-dispatch path runs tasks on the caller's thread: kernels launch on
  // this device's GPU only once it is the thread's current one.
  if (!mem.host() && mem.ops->bind) mem.ops->bind(rt.gpu_of(dr.dev));
  Scratch<char> owned_scratch(values.size(), 0);
  std::vector<char>& owned = owned_scratch.get();
  auto ensure = [&](int v) {
    if (!slots[v]) {
      slots[v] = alloc.allocate(std::max<size_t>(values[v].local_bytes, 1));
      owned[v] = 1;
    }
    return slots[v];
  };
  auto release_all = [&] {
    for (size_t v = 0; v < values.size(); ++v)
      if (owned[v]) alloc.release(slots[v], std::max<size_t>(values[v].local_bytes, 1));
  };
  // A value aliased into a preallocated output (a shard_map body's result) is computed
  // straight into that output's buffer instead of being copied there at the alias.
  for (const auto& [s, pos] : dr.steps) {
    const Step& st = steps[s];
    if (st.alias && slots[st.outs[0]] && !slots[st.ins[0]]) slots[st.ins[0]] = slots[st.outs[0]];
  }
  GroupSequence seq(dr.groups);
  try {
    SmallVec<const void*, 8> ip;
    SmallVec<void*, 8> op;
    for (size_t k = 0; k < dr.steps.size(); ++k) {
      const auto& [s, pos] = dr.steps[k];
      const Step& st = steps[s];
      const bool rec = timeline::on();
      const int64_t t0 = rec ? timeline::now_ns() : 0;
      if (rec) timeline::take_wait();
      if (st.ctl) {
        run_control(*this, st, pos, slots, ensure, alloc, mem);
        seq.skip(st.ctl->n_groups[static_cast<size_t>(pos)]);
      } else if (st.alias) {
        int in = st.ins[0], out = st.outs[0];
        if (slots[out] == slots[in]) {
          // computed in place (see above)
        } else if (slots[out]) {
          mem.copy(slots[out], slots[in], values[out].local_bytes);
        } else {
          slots[out] = slots[in];  // owned stays with the source
        }
      } else if (st.coll == Step::Coll::AllReduce) {
        int in = st.ins[0], out = st.outs[0];
        seq.next().all_reduce(slots[in], ensure(out),
                              numel(values[out].layout.shard_shape(values[out].shape)),
                              values[out].dtype, st.reduce_op);
      } else if (st.coll != Step::Coll::None && st.coll != Step::Coll::AxisIndex) {
        int in = st.ins[0], out = st.outs[0];
        run_layout_collective(st, seq.next(), slots[in], ensure(out), values[in].dtype, alloc, mem);
      } else if (st.coll == Step::Coll::AxisIndex) {
        const int32_t rank = st.coll_rank[pos];
        mem.write(ensure(st.outs[0]), &rank, sizeof rank);
      } else if (st.plan) {
        const Plan& pl = *st.plan;
        const DevicePlan& dp = pl.dev[pos];
        int in = st.ins[0], out = st.outs[0];
        // This device's part keeps its block whole (one box, equal shapes) and reduces
        // over no one: a one-device "reduce" or a same-layout copy, where the buffer can
        // be handed over. (A real all-reduce goes to run_plan, which reduces into dst.)
        bool whole = !pl.comm && !dp.zero && dp.src_slot >= 0 && dp.dst_slot >= 0 &&
                     pl.src_local == pl.dst_local && dp.local.size() == 1 &&
                     dp.local[0].extent == pl.dst_local && !(pl.reduce && dp.reduce_ids.size() > 1);
        if (whole) {
          if (pl.reduce) seq.next();  // a one-rank all-reduce is the identity
          const auto& dying = dr.free_after[k];
          if (owned[in] && !slots[out] &&
              std::find(dying.begin(), dying.end(), in) != dying.end()) {
            // The source dies here: hand its buffer over instead of copying it.
            slots[out] = slots[in];
            owned[out] = 1;
            slots[in] = nullptr;
            owned[in] = 0;
          } else {
            mem.copy(ensure(out), slots[in], values[out].local_bytes);
          }
        } else {
          run_plan(pl, pos, dp.src_slot >= 0 ? slots[in] : nullptr,
                   dp.dst_slot >= 0 ? ensure(out) : nullptr, seq);
        }
      } else {
        ip.clear();
        op.clear();
        for (int v : st.ins) ip.push_back(slots[v]);
        for (int v : st.outs) op.push_back(ensure(v));
        KernelArgs a;
        a.prim = st.prim.get();
        a.in = &st.in_local;
        a.out = &st.out_local;
        a.in_ptr = ip.data();
        a.out_ptr = op.data();
        a.out_origin = st.origins.empty() ? nullptr : &st.origins[pos];
        if (!st.in_origins.empty()) {
          a.in_origin = st.in_origins[pos].data();
          a.in_global = st.in_global.data();
        }
        a.busy_devices = st.mesh->size();
        a.stream = mem.stream;
        st.fn(a);
      }
      if (rec) trace_step(*this, s, pos, dr.dev, t0, timeline::now_ns());
      for (int v : dr.free_after[k])
        if (owned[v]) {
          alloc.release(slots[v], std::max<size_t>(values[v].local_bytes, 1));
          owned[v] = 0;
          slots[v] = nullptr;
        }
    }
  } catch (const std::exception& e) {
    seq.fail_rest("jit", e.what());
    release_all();
    throw;
  }
}

namespace {
// A collective step as `.local` shows it: its groups (device ids, the first few) and
// the bytes each device sends into the Group call.
std::string collective_text(const Executable::Step& st,
                            const std::vector<Executable::Value>& vals) {
  using C = Executable::Step::Coll;
  std::set<std::vector<int>> groups(st.coll_ids.begin(), st.coll_ids.end());
  std::ostringstream os;
  const auto& in = vals[static_cast<size_t>(st.ins[0])];
  const auto& out = vals[static_cast<size_t>(st.outs[0])];
  size_t bytes = st.coll == C::AllReduce ? out.local_bytes : in.local_bytes;
  static const char* what[] = {"",        "all_reduce", "",         "all_gather", "reduce_scatter",
                               "permute", "all_to_all", "broadcast"};
  os << what[static_cast<int>(st.coll)] << " in " << groups.size() << " group"
     << (groups.size() == 1 ? "" : "s") << " of " << st.coll_ids[0].size() << ": ";
  int shown = 0;
  for (const auto& g : groups) {
    if (shown++ == 4) {
      os << " ...";
      break;
    }
    os << (shown > 1 ? " " : "") << "{";
    for (size_t i = 0; i < g.size(); ++i) os << (i ? "," : "") << device_at(g[i]).id;
    os << "}";
  }
  os << ", " << bytes << " B per device";
  return os.str();
}
}  // namespace

std::string Executable::str() const {
  std::ostringstream os;
  auto name = [](int v) { return "%" + std::to_string(v); };
  auto local_type = [&](int v) {
    const Value& x = values[v];
    return std::string(dtype_short_name(x.dtype)) + shape_str(x.layout.shard_shape(x.shape));
  };
  os << "inputs:";
  for (int v : inputs)
    os << " " << name(v) << ":" << local_type(v) << " " << values[v].layout.spec();
  os << "\n";
  for (const Step& st : steps) {
    os << "  ";
    if (st.plan) {
      const Value& a = values[st.ins[0]];
      const Value& b = values[st.outs[0]];
      os << name(st.outs[0]) << ":" << local_type(st.outs[0]) << " = reshard " << name(st.ins[0])
         << " " << a.layout.spec() << " -> " << b.layout.spec() << "  [";
      std::vector<std::string> what = plan_steps(*st.plan);
      for (size_t i = 0; i < what.size(); ++i) os << (i ? ", " : "") << what[i];
      os << "]\n";
    } else if (st.alias && !st.prim) {
      os << name(st.outs[0]) << ":" << local_type(st.outs[0]) << " = block " << name(st.ins[0])
         << "  [shard_map boundary: same buffer]\n";
    } else if (st.alias) {
      os << name(st.outs[0]) << ":" << local_type(st.outs[0]) << " = " << st.prim->name() << "["
         << st.prim->params() << "] " << name(st.ins[0]) << "   [size-1 local dims: same buffer]\n";
    } else {
      for (size_t j = 0; j < st.outs.size(); ++j)
        os << (j ? " " : "") << name(st.outs[j]) << ":" << local_type(st.outs[j]);
      os << " = " << st.prim->name();
      std::string p = st.prim->params();
      if (!p.empty()) os << "[" << p << "]";
      for (int v : st.ins) os << " " << name(v);
      if (!st.coll_ids.empty()) {
        os << "   [" << collective_text(st, values) << "]\n";
        continue;
      }
      os << "   on " << st.mesh->size() << " device" << (st.mesh->size() == 1 ? "" : "s")
         << (st.ctl ? ", on the devices\n" : "\n");
      if (!st.ctl) continue;
      auto bodies = st.prim->bodies();
      for (size_t b = 0; b < st.ctl->subs.size(); ++b) {
        std::istringstream sub(st.ctl->subs[b]->str());
        os << "    " << (b < bodies.size() ? bodies[b].first : "body") << ":\n";
        for (std::string line; std::getline(sub, line);) os << "      " << line << "\n";
      }
    }
  }
  os << "outputs:";
  for (int v : outputs) os << " " << name(v) << " " << values[v].layout.spec();
  os << "\n";
  return os.str();
}

}  // namespace tsr::detail
