#include "tsr/core/program.h"

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "tsr/core/primitive.h"
#include "tsr/error.h"

namespace tsr::detail {

std::vector<ArrayType> Program::in_types() const {
  std::vector<ArrayType> t;
  for (const auto& v : const_vars) t.push_back(v->type);
  for (const auto& v : in_vars) t.push_back(v->type);
  return t;
}

std::vector<ArrayType> Program::out_types() const {
  std::vector<ArrayType> t;
  for (const auto& v : out_vars) t.push_back(v->type);
  return t;
}

namespace {

struct Printer {
  std::map<const Var*, std::string> names;
  size_t next = 0;
  std::string name(const VarPtr& v) {
    auto it = names.find(v.get());
    if (it != names.end()) return it->second;
    std::string n;
    size_t k = next++;
    // bijective base-26: a..z, ba..bz, ca.. (as JAX).
    if (k < 26) {
      n = std::string(1, static_cast<char>('a' + k));
    } else {
      size_t hi = k / 26, lo = k % 26;
      n = name_of_index(hi) + static_cast<char>('a' + lo);
    }
    names.emplace(v.get(), n);
    return n;
  }
  static std::string name_of_index(size_t k) {
    std::string s;
    do {
      s.insert(s.begin(), static_cast<char>('a' + k % 26));
      k /= 26;
    } while (k > 0);
    return s;
  }
  std::string decl(const VarPtr& v) { return name(v) + ":" + v->type.str(); }

  void print(std::ostream& os, const Program& p, int indent) {
    std::string pad(static_cast<size_t>(indent), ' ');
    os << "{ lambda ";
    for (size_t i = 0; i < p.const_vars.size(); ++i) os << (i ? " " : "") << decl(p.const_vars[i]);
    os << (p.const_vars.empty() ? "; " : " ; ");
    for (size_t i = 0; i < p.in_vars.size(); ++i) os << (i ? " " : "") << decl(p.in_vars[i]);
    os << ". let\n";
    for (const auto& e : p.eqns) {
      os << pad << "    ";
      for (size_t j = 0; j < e.outs.size(); ++j) os << (j ? " " : "") << decl(e.outs[j]);
      os << " = " << e.prim->name();
      std::string params = e.prim->params();
      if (auto subs = e.prim->bodies(); !subs.empty()) {
        os << "[" << params;
        for (size_t k = 0; k < subs.size(); ++k) {
          os << (k || !params.empty() ? " " : "") << subs[k].first << "=";
          Printer inner;
          inner.next = 0;
          inner.print(os, *subs[k].second, indent + 6);
        }
        os << "]";
      } else if (!params.empty()) {
        os << "[" << params << "]";
      }
      for (const auto& v : e.ins) os << " " << name(v);
      os << "\n";
    }
    os << pad << "  in (";
    for (size_t i = 0; i < p.out_vars.size(); ++i) os << (i ? ", " : "") << name(p.out_vars[i]);
    os << (p.out_vars.size() == 1 ? ",) }" : ") }");
  }
};

}  // namespace

std::string Program::str() const {
  std::ostringstream os;
  Printer pr;
  pr.print(os, *this, 0);
  return os.str();
}

Program lift_consts(const Program& p) {
  Program q = p;
  q.in_vars = p.const_vars;
  q.in_vars.insert(q.in_vars.end(), p.in_vars.begin(), p.in_vars.end());
  q.const_vars.clear();
  q.consts.clear();
  return q;
}

Program dce(const Program& p) {
  std::set<const Var*> live;
  for (const auto& v : p.out_vars) live.insert(v.get());
  std::vector<bool> keep(p.eqns.size(), false);
  for (size_t i = p.eqns.size(); i-- > 0;) {
    const Eqn& e = p.eqns[i];
    bool used = e.prim->effectful();
    for (const auto& v : e.outs) used = used || live.count(v.get());
    if (!used) continue;
    keep[i] = true;
    for (const auto& v : e.ins) live.insert(v.get());
  }
  Program out = p;
  out.eqns.clear();
  for (size_t i = 0; i < p.eqns.size(); ++i)
    if (keep[i]) out.eqns.push_back(p.eqns[i]);
  // Unused captured constants are dropped too; explicit inputs stay (the signature).
  out.const_vars.clear();
  out.consts.clear();
  for (size_t i = 0; i < p.const_vars.size(); ++i)
    if (live.count(p.const_vars[i].get())) {
      out.const_vars.push_back(p.const_vars[i]);
      out.consts.push_back(p.consts[i]);
    }
  return out;
}

bool same_program(const Program& a, const Program& b) {
  if (&a == &b) return true;
  if (!a.const_vars.empty() || !b.const_vars.empty() || a.in_vars.size() != b.in_vars.size() ||
      a.eqns.size() != b.eqns.size() || a.out_vars.size() != b.out_vars.size())
    return false;
  std::unordered_map<const Var*, size_t> ia, ib;  // variable -> definition order
  for (size_t i = 0; i < a.in_vars.size(); ++i) {
    if (!(a.in_vars[i]->type == b.in_vars[i]->type)) return false;
    ia[a.in_vars[i].get()] = i;
    ib[b.in_vars[i].get()] = i;
  }
  auto same_var = [&](const VarPtr& x, const VarPtr& y) {
    auto i = ia.find(x.get()), j = ib.find(y.get());
    return i != ia.end() && j != ib.end() && i->second == j->second;
  };
  for (size_t k = 0; k < a.eqns.size(); ++k) {
    const Eqn &ea = a.eqns[k], &eb = b.eqns[k];
    if (ea.ins.size() != eb.ins.size() || ea.outs.size() != eb.outs.size() ||
        !ea.prim->equals(*eb.prim))
      return false;
    for (size_t i = 0; i < ea.ins.size(); ++i)
      if (!same_var(ea.ins[i], eb.ins[i])) return false;
    for (size_t i = 0; i < ea.outs.size(); ++i) {
      if (!(ea.outs[i]->type == eb.outs[i]->type)) return false;
      const size_t n = ia.size();
      ia[ea.outs[i].get()] = n;
      ib[eb.outs[i].get()] = n;
    }
  }
  for (size_t j = 0; j < a.out_vars.size(); ++j)
    if (!same_var(a.out_vars[j], b.out_vars[j])) return false;
  return true;
}

Program cse(const Program& p) {
  // Key: primitive (equals/hash) + input variables; value: index of the kept equation.
  std::unordered_map<size_t, std::vector<size_t>> seen;
  std::unordered_map<const Var*, VarPtr> subst;
  auto sub = [&](const VarPtr& v) {
    auto it = subst.find(v.get());
    return it == subst.end() ? v : it->second;
  };
  Program out = p;
  out.eqns.clear();
  for (const Eqn& e0 : p.eqns) {
    Eqn e = e0;
    for (auto& v : e.ins) v = sub(v);
    bool mergeable = !e.prim->effectful() && !e.prim->subprogram();
    size_t h = e.prim->hash();
    for (const auto& v : e.ins) h = h * 1000003 + std::hash<const void*>()(v.get());
    const Eqn* match = nullptr;
    if (mergeable)
      for (size_t idx : seen[h]) {
        const Eqn& prev = out.eqns[idx];
        if (prev.ins != e.ins || !prev.prim->equals(*e.prim)) continue;
        match = &prev;
        break;
      }
    if (match) {
      for (size_t j = 0; j < e.outs.size(); ++j) subst[e.outs[j].get()] = match->outs[j];
      continue;
    }
    if (mergeable) seen[h].push_back(out.eqns.size());
    out.eqns.push_back(std::move(e));
  }
  for (auto& v : out.out_vars) v = sub(v);
  return out;
}

void typecheck(const Program& p) {
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const Eqn& e = p.eqns[i];
    std::vector<ArrayType> in;
    for (const auto& v : e.ins) in.push_back(v->type);
    std::vector<ArrayType> got;
    try {
      got = e.prim->infer(in);
    } catch (const Error& err) {
      throw TypeError("[typecheck] equation " + std::to_string(i) + " (" + e.prim->name() +
                      ") no longer type-checks: " + err.what() +
                      ". Got its recorded inputs; expected them to satisfy the rule. A pass "
                      "changed an input type without updating this equation.");
    }
    if (got.size() != e.outs.size())
      throw TypeError("[typecheck] equation " + std::to_string(i) + " (" + e.prim->name() +
                      ") has " + std::to_string(e.outs.size()) + " outputs. Got " +
                      std::to_string(e.outs.size()) + "; expected " + std::to_string(got.size()) +
                      ". A pass built a malformed equation.");
    for (size_t j = 0; j < got.size(); ++j) {
      const ArrayType& rec = e.outs[j]->type;
      if (!(got[j] == rec) || got[j].weak != rec.weak || !(got[j].sharding == rec.sharding))
        throw TypeError("[typecheck] equation " + std::to_string(i) + " (" + e.prim->name() +
                        ") output " + std::to_string(j) + " has the wrong type. Got recorded " +
                        rec.str() + "; expected " + got[j].str() +
                        " from the rule. A pass changed types without re-inferring.");
    }
  }
}

EqnMeshScope::EqnMeshScope(const Eqn& e) : EqnMeshScope(e.ctx) {}

EqnMeshScope::EqnMeshScope(const AbstractMesh& m) {
  if (!m.empty() && !(m == get_abstract_mesh())) scope_.emplace(m);
}

}  // namespace tsr::detail
