#include "tsr/sharding/propagate.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string_view>

#include "tsr/core/primitive.h"
#include "tsr/error.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/prims/common.h"
#include "tsr/prims/control_flow.h"
#include "tsr/prims/linalg.h"
#include "tsr/prims/shard_map.h"
#include "tsr/prims/sharding_ops.h"

namespace tsr::detail {
namespace {

using Dim = std::pair<int, int>;  // (operand or result, dimension)

// How an equation's dimensions correspond, found by asking its own sharding rule
// (docs/design/0013 §2): input dims in one factor shard together; `outs` are the
// result dims a factor's sharding reaches; `pair` marks dot_general's contracting
// pairs (sharded on both sides: a partial result and one all-reduce).
struct Factors {
  std::vector<std::vector<Dim>> ins;
  std::vector<std::vector<Dim>> outs;
  std::vector<char> pair;
  std::vector<std::vector<int>> of;  // [input][dim] -> factor, -1 for a size-1 dim
  // The result's layout is a parameter (an out_sharding the AD rules or ops set,
  // naming Explicit axes only): its Auto part follows the factors, as the
  // partitioner lays out any out_sharding.
  bool override = false;
};

// The axes of `e` whose type on `m` is (or is not) Auto.
Axes part(const PartitionEntry& e, const AbstractMesh& m, bool want_auto) {
  Axes out;
  for (const auto& a : e.axes()) {
    bool is_auto = m.axis_index(a) >= 0 && m.axis_type(a) == AxisType::Auto;
    if (is_auto == want_auto) out.push_back(a);
  }
  return out;
}

double local_bytes(const Shape& s, DType dt, const PartitionSpec& spec, const AbstractMesh& m) {
  double n = static_cast<double>(itemsize(dt));
  const auto& es = spec.entries();
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t k = 1;
    if (d < es.size())
      for (const auto& a : es[d].axes())
        if (m.axis_index(a) >= 0) k *= m.axis_size(a);
    n *= static_cast<double>((s[d] + k - 1) / k);
  }
  return n;
}

// The cost model (docs/design/0013 §3): bytes each device sends or receives, then the
// elements a device computes (work replicated across devices), then local copy bytes.
// `moved` is the part of `comm` that reshuffles a layout (all-to-all, gather) rather
// than reducing a partial result; `bias` weighs it more in one of the strategies.
struct Cost {
  double comm = 0, compute = 0, copy = 0, moved = 0, bias = 0;
  Cost& operator+=(const Cost& o) {
    comm += o.comm;
    compute += o.compute;
    copy += o.copy;
    moved += o.moved;
    return *this;
  }
  bool operator<(const Cost& o) const {
    auto lt = [](double a, double b) { return a < b - 1e-9 * std::max(1.0, b); };
    const double x = comm + bias, y = o.comm + o.bias;
    if (lt(x, y) || lt(y, x)) return lt(x, y);
    if (lt(compute, o.compute) || lt(o.compute, compute)) return lt(compute, o.compute);
    return lt(copy, o.copy);
  }
};

// What moving a value from layout `a` to `b` costs: an unreduced source is reduced
// (about its partial block), a finer layout along the same axes is a local slice,
// anything else receives the destination block.
Cost move_cost(const PartitionSpec& a, const PartitionSpec& b, const Shape& s, DType dt,
               const AbstractMesh& m) {
  Cost c;
  const int rank = static_cast<int>(s.size());
  PartitionSpec x = a.normalized(rank), y = b.normalized(rank);
  if (x == y) return c;
  bool reduce = false;
  for (const auto& u : x.unreduced()) reduce = reduce || !y.unreduced().count(u);
  if (reduce) c.comm += local_bytes(s, dt, x, m);
  if (x.entries() == y.entries()) return c;
  bool local = true;
  for (int d = 0; d < rank; ++d) {
    const Axes &p = x.entries()[d].axes(), &q = y.entries()[d].axes();
    local = local && p.size() <= q.size() && std::equal(p.begin(), p.end(), q.begin());
  }
  const double bytes = local_bytes(s, dt, y, m);
  if (local) {
    c.copy += bytes;
  } else {
    c.comm += bytes;
    c.moved += bytes;
  }
  return c;
}

// The abstract mesh an equation computes on: its first typed output's, else input's.
AbstractMesh eqn_mesh(const Eqn& e, const AbstractMesh& program) {
  for (const auto& v : e.outs)
    if (!v->type.sharding.mesh().empty()) return v->type.sharding.mesh();
  for (const auto& v : e.ins)
    if (!v->type.sharding.mesh().empty()) return v->type.sharding.mesh();
  return program;
}

// Equations the pass leaves to their types: shard_map and collectives, placements on
// another mesh, values with manual axes, meshes without Auto axes, mixed meshes.
bool opaque(const Eqn& e, const AbstractMesh& am) {
  const Primitive& p = *e.prim;
  if (dynamic_cast<const prim::ShardMap*>(&p) || dynamic_cast<const prim::Collective*>(&p) ||
      dynamic_cast<const prim::LayoutCollective*>(&p) || am.auto_axes().empty() ||
      (p.placement_mesh() && !(p.placement_mesh()->abstract_mesh() == am)))
    return true;
  for (const auto& v : e.outs)
    if (!v->type.sharding.mesh().empty() && !(v->type.sharding.mesh() == am)) return true;
  for (const auto& v : e.ins)
    if (!v->type.sharding.mesh().empty() && !(v->type.sharding.mesh() == am)) return true;
  for (const auto& v : e.ins)
    if (!v->type.vma.empty()) return true;
  return false;
}

struct Pass {
  AbstractMesh program;  // the program's mesh
  AbstractMesh am;       // the mesh of the equation at hand
  AbstractMesh ex;       // the same with every axis Explicit: layouts as types
  std::vector<std::string> autos;

  // Makes `e`'s mesh the one at hand.
  void enter(const Eqn& e) {
    AbstractMesh m = eqn_mesh(e, program);
    if (m == am) return;
    am = m;
    std::vector<std::pair<std::string, AxisType>> u;
    for (const auto& a : m.auto_axes()) u.emplace_back(a, AxisType::Explicit);
    ex = m.empty() ? m : m.update_axis_types(u);
    autos = m.empty() ? std::vector<std::string>{} : m.auto_axes();
  }
  AutoLayouts& res;
  std::unordered_map<const Var*, std::vector<PartitionSpec>> demand, next_demand;
  // Backward sweeps visit equations last to first and record each consumer's wish
  // straight into `demand`, so a wish reaches every producer in one sweep.
  bool backward = false;
  std::unordered_map<const Var*, std::vector<PartitionSpec>>& sink() {
    return backward ? demand : next_demand;
  }
  std::unordered_map<const Eqn*, Factors> factors;
  double sticky = 1;  // weight of reshuffled bytes when choosing (1: bytes as they are)
  Cost total;         // what the sweep's layouts cost, unweighted

  PartitionSpec type_spec(const ArrayType& t) const {
    return t.sharding.spec().normalized(t.ndim());
  }
  PartitionSpec layout(const VarPtr& v) const {
    auto it = res.var.find(v.get());
    return it != res.var.end() ? it->second : type_spec(v->type);
  }
  ArrayType layout_type(const ArrayType& t, const std::vector<PartitionEntry>& e) const {
    ArrayType lt = make_type(t.shape, t.dtype, t.weak, ex, e, t.sharding.spec());
    lt.vma = t.vma;
    return lt;
  }

  // Probes the rule with one size-1 axis on one input dimension at a time: where the
  // rule carries it in the results is how the dimensions correspond.
  const Factors& factors_of(const Eqn& e) {
    auto it = factors.find(&e);
    if (it != factors.end()) return it->second;
    static const std::string probe = "__tsr_probe";
    AbstractMesh pm({1}, {probe}, {AxisType::Explicit});
    std::vector<ArrayType> base;
    std::vector<int> offset;
    int n = 0;
    for (const auto& v : e.ins) {
      base.push_back(make_type(v->type.shape, v->type.dtype, v->type.weak, pm, P()));
      offset.push_back(n);
      n += v->type.ndim();
    }
    std::vector<int> parent(static_cast<size_t>(n));
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> find = [&](int x) {
      return parent[x] == x ? x : parent[x] = find(parent[x]);
    };
    auto unite = [&](int a, int b) { parent[find(a)] = find(b); };
    std::map<Dim, int> first_in;  // result dim -> an input dim reaching it
    std::vector<std::vector<Dim>> reach(static_cast<size_t>(n));
    for (size_t i = 0; i < e.ins.size(); ++i) {
      const ArrayType& t = e.ins[i]->type;
      for (int d = 0; d < t.ndim(); ++d) {
        if (t.shape[d] <= 1) continue;
        std::vector<ArrayType> in = base;
        std::vector<PartitionEntry> pe(static_cast<size_t>(t.ndim()));
        pe[d] = PartitionEntry(probe);
        std::vector<ArrayType> out;
        try {
          in[i] = make_type(t.shape, t.dtype, t.weak, pm, spec_of(pe));
          out = e.prim->infer(in);
        } catch (const std::exception&) {
          // Rules that want equal operand shardings (select_n, concatenate): probe
          // dim d of every operand of the same rank and size together.
          std::vector<int> joint;
          for (size_t o = 0; o < e.ins.size(); ++o) {
            const ArrayType& u = e.ins[o]->type;
            if (o == i || u.ndim() != t.ndim() || u.shape[d] != t.shape[d]) continue;
            in[o] = make_type(u.shape, u.dtype, u.weak, pm, spec_of(pe));
            joint.push_back(offset[o] + d);
          }
          try {
            if (joint.empty()) continue;
            out = e.prim->infer(in);
          } catch (const std::exception&) {
            continue;  // the rule refuses it: this dim does not shard through the op
          }
          for (int o : joint) unite(o, offset[i] + d);
        }
        for (size_t j = 0; j < out.size(); ++j) {
          auto oe = entries_of(out[j]);
          for (size_t k = 0; k < oe.size(); ++k) {
            const Axes& ax = oe[k].axes();
            if (std::find(ax.begin(), ax.end(), probe) == ax.end()) continue;
            Dim od{static_cast<int>(j), static_cast<int>(k)};
            int me = offset[i] + d;
            reach[static_cast<size_t>(me)].push_back(od);
            auto [f, fresh] = first_in.emplace(od, me);
            if (!fresh) unite(me, f->second);
          }
        }
      }
    }
    // A rule whose result ignores its operands (an out_sharding parameter): ask the
    // partitioner instead, one result dimension at a time.
    bool override = false;
    if (first_in.empty() && !e.outs.empty()) {
      std::vector<ArrayType> obase;
      for (const auto& v : e.outs)
        obase.push_back(make_type(v->type.shape, v->type.dtype, v->type.weak, pm, P()));
      // Operand dimensions the partitioner carries into the kernel's results.
      for (size_t i = 0; i < e.ins.size(); ++i) {
        const ArrayType& t = e.ins[i]->type;
        for (int d = 0; d < t.ndim(); ++d) {
          if (t.shape[d] <= 1) continue;
          std::vector<ArrayType> in = base;
          std::vector<PartitionEntry> pe(static_cast<size_t>(t.ndim()));
          pe[d] = PartitionEntry(probe);
          Lowering l;
          try {
            in[i] = make_type(t.shape, t.dtype, t.weak, pm, spec_of(pe));
            l = e.prim->partition(in, obase);
          } catch (const std::exception&) {
            continue;
          }
          PartitionSpec w = l.in[i].normalized(t.ndim());
          const Axes& kept = w.entries()[d].axes();
          if (std::find(kept.begin(), kept.end(), probe) == kept.end()) continue;
          for (size_t j = 0; j < l.out.size() && j < e.outs.size(); ++j) {
            PartitionSpec o = l.out[j].normalized(e.outs[j]->type.ndim());
            for (int k = 0; k < e.outs[j]->type.ndim(); ++k) {
              const Axes& ax = o.entries()[k].axes();
              if (std::find(ax.begin(), ax.end(), probe) == ax.end()) continue;
              Dim od{static_cast<int>(j), k};
              int me = offset[i] + d;
              reach[static_cast<size_t>(me)].push_back(od);
              auto [f, fresh] = first_in.emplace(od, me);
              if (!fresh) unite(me, f->second);
              override = true;
            }
          }
        }
      }
      for (size_t j = 0; j < e.outs.size(); ++j) {
        const ArrayType& t = e.outs[j]->type;
        for (int k = 0; k < t.ndim(); ++k) {
          if (t.shape[k] <= 1) continue;
          std::vector<ArrayType> out = obase;
          std::vector<PartitionEntry> pe(static_cast<size_t>(t.ndim()));
          pe[k] = PartitionEntry(probe);
          Lowering l;
          try {
            out[j] = make_type(t.shape, t.dtype, t.weak, pm, spec_of(pe));
            l = e.prim->partition(base, out);
          } catch (const std::exception&) {
            continue;
          }
          for (size_t i = 0; i < e.ins.size() && i < l.in.size(); ++i) {
            PartitionSpec w = l.in[i].normalized(e.ins[i]->type.ndim());
            for (int d = 0; d < e.ins[i]->type.ndim(); ++d) {
              const Axes& ax = w.entries()[d].axes();
              if (std::find(ax.begin(), ax.end(), probe) == ax.end()) continue;
              if (e.ins[i]->type.shape[d] <= 1) continue;
              Dim od{static_cast<int>(j), k};
              int me = offset[i] + d;
              reach[static_cast<size_t>(me)].push_back(od);
              auto [f, fresh] = first_in.emplace(od, me);
              if (!fresh) unite(me, f->second);
              override = true;
            }
          }
        }
      }
    }
    std::set<int> paired;
    if (const auto* dot = dynamic_cast<const prim::DotGeneral*>(e.prim.get()))
      for (size_t k = 0; k < dot->dims().lhs_contract.size(); ++k) {
        int a = offset[0] + dot->dims().lhs_contract[k],
            b = offset[1] + dot->dims().rhs_contract[k];
        unite(a, b);
        paired.insert(find(b));
      }
    Factors f;
    f.override = override;
    std::map<int, int> id;
    for (size_t i = 0; i < e.ins.size(); ++i) {
      const ArrayType& t = e.ins[i]->type;
      f.of.emplace_back(static_cast<size_t>(t.ndim()), -1);
      for (int d = 0; d < t.ndim(); ++d) {
        if (t.shape[d] <= 1) continue;
        int r = find(offset[i] + d);
        auto [slot, fresh] = id.emplace(r, static_cast<int>(f.ins.size()));
        if (fresh) {
          f.ins.emplace_back();
          f.outs.emplace_back();
          f.pair.push_back(0);
        }
        f.of[i][d] = slot->second;
        f.ins[slot->second].push_back({static_cast<int>(i), d});
        for (const auto& od : reach[static_cast<size_t>(offset[i] + d)])
          if (std::find(f.outs[slot->second].begin(), f.outs[slot->second].end(), od) ==
              f.outs[slot->second].end())
            f.outs[slot->second].push_back(od);
      }
    }
    for (int r : paired) {
      // A contracting pair's root may have changed since: look it up again.
      for (const auto& [root, slot] : id)
        if (find(root) == find(r)) f.pair[slot] = 1;
    }
    return factors.emplace(&e, std::move(f)).first->second;
  }

  struct Choice {
    Cost cost, own;  // own: without the consumers' side
    AutoLayouts::EqnTypes types;
    std::vector<PartitionSpec> in_want, out_spec;
  };

  // Evaluates one assignment of Auto axes to factors; false when the rule (or the
  // layout's validity) refuses it.
  bool evaluate(const Eqn& e, const Factors& f, const std::vector<Axes>& pick,
                const std::vector<PartitionSpec>& cur, Choice& c) {
    c = Choice{};
    for (size_t i = 0; i < e.ins.size(); ++i) {
      const ArrayType& t = e.ins[i]->type;
      auto te = entries_of(t);
      std::vector<PartitionEntry> le;
      std::set<std::string> used;
      for (int d = 0; d < t.ndim(); ++d) {
        Axes ax = part(te[d], am, false);
        if (f.of[i][d] >= 0) {
          const Axes& add = pick[static_cast<size_t>(f.of[i][d])];
          ax.insert(ax.end(), add.begin(), add.end());
        }
        for (const auto& a : ax)
          if (!used.insert(a).second) return false;
        le.emplace_back(ax);
      }
      try {
        c.types.in.push_back(layout_type(t, le));
      } catch (const std::exception&) {
        return false;  // does not divide
      }
    }
    try {
      c.types.out = e.prim->infer(c.types.in);
    } catch (const std::exception&) {
      const auto* dot = dynamic_cast<const prim::DotGeneral*>(e.prim.get());
      if (!dot) return false;
      // Both contracting dims on the same Auto axes: the kernel computes a partial
      // result (Megatron's row-parallel layer); the result keeps batch and free dims.
      const auto& dd = dot->dims();
      auto le = entries_of(c.types.in[0]), re = entries_of(c.types.in[1]);
      std::vector<PartitionEntry> oe;
      for (int b : dd.lhs_batch) oe.push_back(le[b]);
      for (int d = 0; d < static_cast<int>(le.size()); ++d)
        if (std::count(dd.lhs_contract.begin(), dd.lhs_contract.end(), d) == 0 &&
            std::count(dd.lhs_batch.begin(), dd.lhs_batch.end(), d) == 0)
          oe.push_back(le[d]);
      for (int d = 0; d < static_cast<int>(re.size()); ++d)
        if (std::count(dd.rhs_contract.begin(), dd.rhs_contract.end(), d) == 0 &&
            std::count(dd.rhs_batch.begin(), dd.rhs_batch.end(), d) == 0)
          oe.push_back(re[d]);
      try {
        c.types.out = {layout_type(e.outs[0]->type, oe)};
      } catch (const std::exception&) {
        return false;
      }
    }
    if (c.types.out.size() != e.outs.size()) return false;
    if (f.override) {
      // The result follows the factors (the partitioner lays out any out_sharding).
      for (size_t j = 0; j < e.outs.size(); ++j) {
        const ArrayType& t = e.outs[j]->type;
        auto le = entries_of(c.types.out[j]);
        std::set<std::string> used;
        for (const auto& en : le) used.insert(en.axes().begin(), en.axes().end());
        for (size_t k = 0; k < f.outs.size(); ++k)
          for (const auto& [jj, d] : f.outs[k]) {
            if (jj != static_cast<int>(j)) continue;
            Axes ax = le[d].axes();
            for (const auto& a : pick[k])
              if (used.insert(a).second) ax.push_back(a);
            le[d] = PartitionEntry(ax);
          }
        try {
          c.types.out[j] = layout_type(t, le);
        } catch (const std::exception&) {
          return false;
        }
      }
    }
    for (size_t j = 0; j < e.outs.size(); ++j) {
      const ArrayType& t = e.outs[j]->type;
      ArrayType& lt = c.types.out[j];
      if (lt.shape != t.shape) return false;
      auto te = entries_of(t), le = entries_of(lt);
      // The Explicit part is the type's (never shard along an Explicit axis behind
      // the type system's back, spec §14); an Auto axis is never unreduced in a value.
      for (int d = 0; d < t.ndim(); ++d)
        if (part(te[d], am, false) != part(le[d], am, false)) return false;
      for (const auto& u : lt.sharding.spec().unreduced())
        if (am.axis_index(u) < 0 || am.axis_type(u) == AxisType::Auto) return false;
      lt.vma = t.vma;
      c.out_spec.push_back(type_spec(lt));
    }
    Lowering l;
    try {
      l = e.prim->partition(c.types.in, c.types.out);
    } catch (const std::exception&) {
      return false;
    }
    for (size_t i = 0; i < e.ins.size(); ++i) {
      const ArrayType& t = e.ins[i]->type;
      PartitionSpec w = l.in[i].normalized(t.ndim());
      c.cost += move_cost(cur[i], w, t.shape, t.dtype, am);
      c.cost.compute += local_bytes(t.shape, DType::UInt8, w, am);
      c.in_want.push_back(w);
    }
    for (size_t j = 0; j < e.outs.size(); ++j) {
      const ArrayType& t = e.outs[j]->type;
      c.cost += move_cost(l.out[j], c.out_spec[j], t.shape, t.dtype, am);
      c.cost.compute += local_bytes(t.shape, DType::UInt8, l.out[j].normalized(t.ndim()), am);
    }
    c.own = c.cost;
    for (size_t j = 0; j < e.outs.size(); ++j) {
      const ArrayType& t = e.outs[j]->type;
      auto it = demand.find(e.outs[j].get());
      if (it != demand.end())
        for (const auto& want : it->second)
          c.cost += move_cost(c.out_spec[j], want, t.shape, t.dtype, am);
    }
    c.cost.bias = (sticky - 1) * c.cost.moved;
    return true;
  }

  // Picks the cheapest assignment of Auto axes to the equation's factors.
  void choose(const Eqn& e) {
    const Factors& f = factors_of(e);
    std::vector<PartitionSpec> cur;
    bool any_sharded = false;
    for (const auto& v : e.ins) {
      cur.push_back(layout(v));
      for (const auto& en : cur.back().entries()) any_sharded = any_sharded || !en.is_none();
    }
    const size_t nf = f.ins.size();
    const bool is_dot = dynamic_cast<const prim::DotGeneral*>(e.prim.get()) != nullptr;
    std::vector<std::vector<Axes>> opts(nf, std::vector<Axes>{Axes{}});
    auto offer = [&](size_t k, const Axes& a) {
      if (std::find(opts[k].begin(), opts[k].end(), a) == opts[k].end()) opts[k].push_back(a);
    };
    for (size_t k = 0; k < nf; ++k) {
      for (const auto& [i, d] : f.ins[k]) offer(k, part(cur[i].entries()[d], am, true));
      for (const auto& [j, d] : f.outs[k]) {
        auto it = demand.find(e.outs[j].get());
        if (it == demand.end()) continue;
        for (const auto& want : it->second)
          if (d < want.size()) offer(k, part(want.entries()[d], am, true));
      }
      // A dot_general with a sharded operand may split its other operand along any
      // Auto axis (a free local slice of a replicated weight: Megatron's column and row
      // layers). Elsewhere sharding only follows operands and consumers: inventing it
      // would trade later communication for less compute.
      if (is_dot && any_sharded && (!f.outs[k].empty() || f.pair[k]))
        for (const auto& a : autos) offer(k, Axes{a});
    }
    // Keep the search small: drop the last-offered options of the largest lists first.
    auto combos = [&] {
      double n = 1;
      for (const auto& o : opts) n *= static_cast<double>(o.size());
      return n;
    };
    while (combos() > 729) {
      auto big = std::max_element(opts.begin(), opts.end(),
                                  [](const auto& a, const auto& b) { return a.size() < b.size(); });
      big->pop_back();
    }
    // The current layouts first: ties keep what the operands already have.
    std::vector<Axes> start(nf);
    for (size_t k = 0; k < nf; ++k) start[k] = opts[k].size() > 1 ? opts[k][1] : opts[k][0];
    std::optional<Choice> best;
    Choice c;
    auto consider = [&](const std::vector<Axes>& pick) {
      if (evaluate(e, f, pick, cur, c) && (!best || c.cost < best->cost)) best = c;
    };
    consider(start);
    std::vector<size_t> idx(nf, 0);
    std::vector<Axes> pick(nf);
    while (true) {
      for (size_t k = 0; k < nf; ++k) pick[k] = opts[k][idx[k]];
      consider(pick);
      size_t k = 0;
      while (k < nf && ++idx[k] == opts[k].size()) idx[k++] = 0;
      if (k == nf) break;
    }
    if (!best) {
      // Nothing the rule accepts (it cannot fail on the types themselves): typed layouts.
      res.eqn.erase(&e);
      for (size_t j = 0; j < e.outs.size(); ++j)
        res.var[e.outs[j].get()] = type_spec(e.outs[j]->type);
      for (const auto& v : e.ins) sink()[v.get()].push_back(type_spec(v->type));
      return;
    }
    total += best->own;
    for (size_t i = 0; i < e.ins.size(); ++i) sink()[e.ins[i].get()].push_back(best->in_want[i]);
    for (size_t j = 0; j < e.outs.size(); ++j) res.var[e.outs[j].get()] = best->out_spec[j];
    res.eqn[&e] = std::move(best->types);
  }

  // Adds what moving v to layout `to` costs to the sweep's total.
  void charge(const VarPtr& v, const PartitionSpec& to) {
    const AbstractMesh& m = v->type.sharding.mesh().empty() ? program : v->type.sharding.mesh();
    total += move_cost(layout(v), to, v->type.shape, v->type.dtype, m);
  }

  static PartitionSpec drop_dim0(const PartitionSpec& s) {
    std::vector<PartitionEntry> e = s.entries();
    if (!e.empty()) e.erase(e.begin());
    return with_sets_of(e, s);
  }
  static PartitionSpec clear_dim0(const PartitionSpec& s) {
    std::vector<PartitionEntry> e = s.entries();
    if (!e.empty()) e[0] = PartitionEntry();
    return with_sets_of(e, s);
  }

  // cond / while / scan, as the Lowerer lowers them (lower_control): operands keep their
  // layouts (xs lose dim 0's sharding), carries keep the carry's layout, and ys and
  // branch outputs are where a forward sweep of the body (branch 0) leaves them.
  // Consumers' wishes stop at a loop boundary: bodies are lowered on their own.
  bool control(const Eqn& e) {
    const auto* c = dynamic_cast<const prim::Cond*>(e.prim.get());
    const auto* w = dynamic_cast<const prim::While*>(e.prim.get());
    const auto* sc = dynamic_cast<const prim::Scan*>(e.prim.get());
    if (!c && !w && !sc) return false;
    if (backward) return true;
    if (w) {
      const size_t first = w->n_cond_consts() + w->n_body_consts();
      for (size_t k = 0; k < e.outs.size(); ++k)
        res.var[e.outs[k].get()] = layout(e.ins[first + k]);
      return true;
    }
    const Program& b = c ? *c->branches()[0] : sc->body();
    const size_t skip = c ? 1 : 0;
    const size_t first_x = sc ? sc->n_consts() + sc->n_carry() : e.ins.size();
    for (size_t i = skip; i < e.ins.size(); ++i) {
      PartitionSpec l = layout(e.ins[i]);
      if (i >= first_x) {
        charge(e.ins[i], clear_dim0(l));
        l = drop_dim0(l);
      }
      res.var[b.in_vars[i - skip].get()] = l;
    }
    sweep(b);
    enter(e);
    for (size_t j = 0; j < e.outs.size(); ++j) {
      if (sc && j < sc->n_carry()) {
        res.var[e.outs[j].get()] = layout(e.ins[sc->n_consts() + j]);
        continue;
      }
      PartitionSpec l = layout(b.out_vars[j]);
      if (sc) {
        std::vector<PartitionEntry> en = l.entries();
        en.insert(en.begin(), PartitionEntry());
        l = with_sets_of(en, l);
      }
      res.var[e.outs[j].get()] = l;
    }
    return true;
  }

  // shard_map: its specs fix the layouts at its boundary (JAX lays the result out as
  // NamedSharding(mesh, out_specs) on every kind of axis): inputs are wanted as their
  // in_specs say, results are their out_specs' layouts, never left open. The body runs
  // on its blocks, laid out as their types say.
  void shard_map(const Eqn& e, const prim::ShardMap& sm) {
    const Program& b = sm.body();
    std::vector<VarPtr> b_in = b.const_vars;
    b_in.insert(b_in.end(), b.in_vars.begin(), b.in_vars.end());
    for (size_t i = 0; i < e.ins.size() && i < b_in.size(); ++i) {
      const ArrayType& t = e.ins[i]->type;
      PartitionSpec want =
          prim::ShardMap::outer_spec(sm.in_specs()[i], b_in[i]->type).normalized(t.ndim());
      charge(e.ins[i], want);
      sink()[e.ins[i].get()].push_back(want);
      res.var[b_in[i].get()] = type_spec(b_in[i]->type);
    }
    for (const auto& v : b.out_vars) demand[v.get()] = {type_spec(v->type)};
    sweep(b);
    enter(e);
    for (size_t j = 0; j < e.outs.size(); ++j)
      res.var[e.outs[j].get()] = prim::ShardMap::outer_spec(sm.out_specs()[j], b.out_vars[j]->type)
                                     .normalized(e.outs[j]->type.ndim());
  }

  // A reshard between two typings of one mesh (use_abstract_mesh, auto_axes,
  // explicit_axes): the result's type fixes its axes that are not Auto there; the Auto
  // part stays open (design 0013 §4), so the value keeps the axes it had that are Auto
  // on the new mesh (leaving an Explicit region pins nothing).
  bool retype(const Eqn& e) {
    if (std::string_view(e.prim->name()) != "reshard" || e.ins.size() != 1) return false;
    const AbstractMesh& from = e.ins[0]->type.sharding.mesh();
    const AbstractMesh& to = e.outs[0]->type.sharding.mesh();
    if (from.empty() || to.empty() || from == to || from.axis_names() != to.axis_names() ||
        from.axis_sizes() != to.axis_sizes() ||
        (from.auto_axes().empty() && to.auto_axes().empty()))
      return false;
    for (const auto& a : to.axis_names())
      if ((from.axis_type(a) == AxisType::Manual) != (to.axis_type(a) == AxisType::Manual))
        return false;
    const ArrayType& t = e.outs[0]->type;
    const PartitionSpec have = layout(e.ins[0]).normalized(t.ndim());
    auto te = entries_of(t);
    std::set<std::string> used(t.sharding.spec().unreduced().begin(),
                               t.sharding.spec().unreduced().end());
    used.insert(t.sharding.spec().reduced().begin(), t.sharding.spec().reduced().end());
    for (const auto& en : te) used.insert(en.axes().begin(), en.axes().end());
    std::vector<PartitionEntry> out;
    for (int d = 0; d < t.ndim(); ++d) {
      Axes ax = part(te[d], to, false);
      int64_t k = 1;
      for (const auto& a : ax) k *= to.axis_size(a);
      for (const auto& a : have.entries()[d].axes())
        if (to.axis_index(a) >= 0 && to.axis_type(a) == AxisType::Auto && !used.count(a) &&
            t.shape[d] % (k * to.axis_size(a)) == 0) {
          ax.push_back(a);
          used.insert(a);
          k *= to.axis_size(a);
        }
      out.emplace_back(ax);
    }
    PartitionSpec s = with_sets_of(out, t.sharding.spec()).normalized(t.ndim());
    charge(e.ins[0], s);
    res.var[e.outs[0].get()] = s;
    sink()[e.ins[0].get()].push_back(s);
    return true;
  }

  void sweep(const Program& p) {
    for (size_t n = 0; n < p.eqns.size(); ++n) {
      const Eqn& e = p.eqns[backward ? p.eqns.size() - 1 - n : n];
      enter(e);
      if (const auto* sm = dynamic_cast<const prim::ShardMap*>(e.prim.get())) {
        shard_map(e, *sm);
      } else if (const Program* sub = e.prim->subprogram()) {
        size_t k = 0;
        for (const auto& v : sub->const_vars) res.var[v.get()] = layout(e.ins[k++]);
        for (const auto& v : sub->in_vars) res.var[v.get()] = layout(e.ins[k++]);
        for (size_t j = 0; j < e.outs.size(); ++j) {
          auto it = demand.find(e.outs[j].get());
          if (it != demand.end()) demand[sub->out_vars[j].get()] = it->second;
        }
        sweep(*sub);
        enter(e);
        k = 0;
        for (const auto* vs : {&sub->const_vars, &sub->in_vars})
          for (const auto& v : *vs) {
            auto it = sink().find(v.get());
            if (it != sink().end()) {
              std::vector<PartitionSpec> wants = it->second;  // sink() may rehash below
              for (const auto& w : wants) sink()[e.ins[k].get()].push_back(w);
            }
            ++k;
          }
        for (size_t j = 0; j < e.outs.size(); ++j) {
          const ArrayType& t = e.outs[j]->type;
          PartitionSpec s = layout(sub->out_vars[j]);
          auto te = entries_of(t);
          bool same = true;  // a forced out_sharding changes the Explicit part
          for (int d = 0; d < t.ndim(); ++d)
            same = same && part(s.entries()[d], am, false) == part(te[d], am, false);
          res.var[e.outs[j].get()] = same ? s : type_spec(t);
        }
      } else if (const auto* wsc = dynamic_cast<const prim::ShardingConstraint*>(e.prim.get())) {
        PartitionSpec s =
            wsc->merged(e.outs[0]->type, layout(e.ins[0])).normalized(e.outs[0]->type.ndim());
        charge(e.ins[0], s);
        res.var[e.outs[0].get()] = s;
        sink()[e.ins[0].get()].push_back(s);
      } else if (retype(e)) {
        // handled
      } else if (!opaque(e, am) && control(e)) {
        // handled
      } else if (opaque(e, am)) {
        for (const auto& v : e.outs) res.var[v.get()] = type_spec(v->type);
        for (const auto& v : e.ins) {
          sink()[v.get()].push_back(type_spec(v->type));
          charge(v, type_spec(v->type));
        }
      } else {
        choose(e);
      }
    }
  }
};

// True when `mesh` or a mesh some equation computes on has Auto axes.
bool has_auto(const Program& p, const AbstractMesh& mesh) {
  if (!mesh.empty() && !mesh.auto_axes().empty()) return true;
  for (const Eqn& e : p.eqns) {
    if (const Program* sub = e.prim->subprogram())
      if (has_auto(*sub, mesh)) return true;
    AbstractMesh m = eqn_mesh(e, mesh);
    if (!m.empty() && !m.auto_axes().empty()) return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<AutoLayouts> propagate_auto(
    const Program& p, const AbstractMesh& mesh, const std::vector<NamedSharding>& in_layouts,
    const std::vector<std::optional<NamedSharding>>& out_layouts) {
  if (!has_auto(p, mesh)) return nullptr;
  std::vector<std::pair<std::string, AxisType>> u;
  for (const auto& a : mesh.auto_axes()) u.emplace_back(a, AxisType::Explicit);
  const AbstractMesh ex = mesh.empty() ? mesh : mesh.update_axis_types(u);
  std::vector<VarPtr> in_vars = p.const_vars;
  in_vars.insert(in_vars.end(), p.in_vars.begin(), p.in_vars.end());
  std::unordered_map<const Var*, PartitionSpec> seeds;
  for (size_t i = 0; i < in_vars.size() && i < in_layouts.size(); ++i) {
    const ArrayType& t = in_vars[i]->type;
    const NamedSharding& l = in_layouts[i];
    const AbstractMesh& tm = t.sharding.mesh().empty() ? mesh : t.sharding.mesh();
    seeds[in_vars[i].get()] =
        l.mesh() == tm ? l.spec().normalized(t.ndim()) : t.sharding.spec().normalized(t.ndim());
  }
  std::unordered_map<const Var*, std::vector<PartitionSpec>> out_demand;
  for (size_t o = 0; o < p.out_vars.size() && o < out_layouts.size(); ++o)
    if (out_layouts[o] && (out_layouts[o]->mesh() == mesh ||
                           out_layouts[o]->mesh() == p.out_vars[o]->type.sharding.mesh()))
      out_demand[p.out_vars[o].get()].push_back(
          out_layouts[o]->spec().normalized(p.out_vars[o]->type.ndim()));
  // Forward sweeps, each seeing what the consumers wanted in the one before (the
  // backward information), until no layout changes. Two strategies: bytes as they
  // are, and reshuffles weighed 4x while choosing (greedy choices are myopic: an
  // all-to-all that is cheap here can force more downstream); the program keeps the
  // one whose layouts move fewer bytes in total (docs/design/0013 §3).
  std::unique_ptr<AutoLayouts> best;
  Cost best_total;
  for (double sticky : {1.0, 4.0}) {
    auto cur = std::make_unique<AutoLayouts>();
    Pass pass{mesh, mesh, ex, mesh.auto_axes(), *cur, {}, {}, false, {}, sticky, {}};
    // Forward: operands' layouts flow to the consumers, with the wishes as costs.
    auto forward = [&] {
      pass.backward = false;
      cur->var = seeds;
      pass.total = Cost{};
      pass.sweep(p);
      pass.next_demand.clear();
      for (const auto& [var, wants] : out_demand) {
        auto it = cur->var.find(var);
        if (it != cur->var.end())
          for (const auto& w : wants)
            pass.total += move_cost(it->second, w, var->type.shape, var->type.dtype, mesh);
      }
    };
    forward();
    cur->sweeps = 1;
    for (int s = 0; s < 4; ++s) {
      auto before = cur->var;
      // Backward: consumers' wishes (jit out_shardings, constraints, what each kernel
      // wants given the last forward layouts) flow to the producers.
      pass.backward = true;
      pass.demand = out_demand;
      pass.sweep(p);
      forward();
      cur->sweeps += 2;
      if (before == cur->var) break;
    }
    if (!best || pass.total < best_total) {
      best = std::move(cur);
      best_total = pass.total;
    }
  }
  return best;
}

}  // namespace tsr::detail
