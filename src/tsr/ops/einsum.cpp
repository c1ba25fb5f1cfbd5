// einsum as one unit (docs/design/0006-einsum.md): parse (with `...`), take the
// diagonals of repeated labels, order the pairwise contractions by opt_einsum's
// greedy path, and give each intermediate a layout its dot_general rule accepts.
// Only the user's out_sharding is a contract; intermediates never raise.
#include <algorithm>
#include <map>
#include <set>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"

namespace tsr {
using namespace detail;

namespace {

struct Term {
  Array x;
  std::string labels;
};

// Ellipsis dims get private labels outside the letters (never printed).
char ellipsis_label(int k) { return static_cast<char>(1 + k); }

std::string show(const std::string& labels) {
  std::string s;
  for (char c : labels) s += std::isalpha(static_cast<unsigned char>(c)) ? c : '.';
  return s;
}

std::vector<PartitionEntry> entries(const Array& x) {
  return x.sharding().spec().normalized(x.ndim()).entries();
}

double size_of(const std::string& labels, const std::map<char, int64_t>& sizes) {
  double n = 1;
  for (char c : labels) n *= static_cast<double>(sizes.at(c));
  return n;
}

// Sums the labels of `t` that `keep` lacks (a label no other term nor the output names).
Term sum_unique(Term t, const std::string& keep) {
  std::vector<int> axes;
  std::string rest;
  for (int i = 0; i < static_cast<int>(t.labels.size()); ++i) {
    if (keep.find(t.labels[i]) == std::string::npos)
      axes.push_back(i);
    else
      rest += t.labels[i];
  }
  if (!axes.empty()) t.x = sum(t.x, axes, {.dtype = t.x.dtype()});
  t.labels = rest;
  return t;
}

// The labels a pair contraction keeps: batch labels (in both, kept), then each
// side's free labels.
struct PairPlan {
  DotDimensionNumbers dims;
  std::string res;
};

PairPlan plan_pair(const Term& l, const Term& r, const std::string& keep) {
  PairPlan p;
  std::string free_l;
  for (int a = 0; a < static_cast<int>(l.labels.size()); ++a) {
    char c = l.labels[a];
    auto b = r.labels.find(c);
    if (b == std::string::npos) {
      free_l += c;
    } else if (keep.find(c) != std::string::npos) {
      p.dims.lhs_batch.push_back(a);
      p.dims.rhs_batch.push_back(static_cast<int>(b));
      p.res += c;
    } else {
      p.dims.lhs_contracting.push_back(a);
      p.dims.rhs_contracting.push_back(static_cast<int>(b));
    }
  }
  p.res += free_l;
  for (char c : r.labels)
    if (l.labels.find(c) == std::string::npos) p.res += c;
  return p;
}

// True when dot_general's rule, given no out_sharding, accepts these layouts.
bool natural_accepts(const Term& l, const Term& r, const PairPlan& p) {
  if (!l.x.sharding().spec().unreduced().empty() || !r.x.sharding().spec().unreduced().empty())
    return true;  // the rule decides (and explains) unreduced operands
  auto le = entries(l.x), re = entries(r.x);
  const auto& d = p.dims;
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (!(le[d.lhs_batch[i]] == re[d.rhs_batch[i]])) return false;
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i)
    if (!le[d.lhs_contracting[i]].is_none() && !re[d.rhs_contracting[i]].is_none()) return false;
  std::set<std::string> used;
  auto take = [&](const PartitionEntry& e) {
    for (const auto& a : e.axes())
      if (!used.insert(a).second) return false;
    return true;
  };
  for (int x : d.lhs_batch)
    if (!take(le[x])) return false;
  for (size_t a = 0; a < le.size(); ++a)
    if (r.labels.find(l.labels[a]) == std::string::npos && !take(le[a])) return false;
  for (size_t b = 0; b < re.size(); ++b)
    if (l.labels.find(r.labels[b]) == std::string::npos && !take(re[b])) return false;
  return true;
}

// An intermediate layout that moves the fewest bytes: the larger operand keeps
// its layout (its batch and free dims first), the smaller one adapts; an axis
// already taken is dropped. dot_general accepts any (non-unreduced) out_sharding.
NamedSharding chosen_layout(const Term& l, const Term& r, const PairPlan& p) {
  bool lhs_big = l.x.size() >= r.x.size();
  const Term& big = lhs_big ? l : r;
  auto le = entries(l.x), re = entries(r.x), be = entries(big.x);
  const Term& small = lhs_big ? r : l;
  auto se = entries(small.x);
  std::vector<PartitionEntry> want(p.res.size());
  std::vector<int> order;  // result positions from the big operand first
  for (size_t k = 0; k < p.res.size(); ++k) {
    char c = p.res[k];
    auto bi = big.labels.find(c), si = small.labels.find(c);
    if (bi != std::string::npos) {
      want[k] = be[bi];
      if (want[k].is_none() && si != std::string::npos) want[k] = se[si];
      order.push_back(static_cast<int>(k));
    }
  }
  for (size_t k = 0; k < p.res.size(); ++k)
    if (big.labels.find(p.res[k]) == std::string::npos) {
      want[k] = se[small.labels.find(p.res[k])];
      order.push_back(static_cast<int>(k));
    }
  std::set<std::string> used;
  std::vector<PartitionEntry> out(p.res.size());
  for (int k : order) {
    bool ok = true;
    for (const auto& a : want[k].axes()) ok = ok && !used.count(a);
    if (!ok) continue;
    for (const auto& a : want[k].axes()) used.insert(a);
    out[k] = want[k];
  }
  AbstractMesh mesh = l.x.sharding().mesh().empty() ? r.x.sharding().mesh() : l.x.sharding().mesh();
  return NamedSharding(mesh, PartitionSpec(out));
}

// The user's out_sharding (in output label order) in the order of `labels`.
NamedSharding permuted(const NamedSharding& s, const std::string& out, const std::string& labels) {
  auto e = s.spec().normalized(static_cast<int>(out.size())).entries();
  std::vector<PartitionEntry> nat;
  for (char c : labels) nat.push_back(e[out.find(c)]);
  return NamedSharding(s.mesh(), PartitionSpec(nat, s.spec().unreduced(), s.spec().reduced(),
                                               s.spec().unreduced_kind()));
}

struct Parsed {
  std::vector<std::string> ins;
  std::string out;
};

[[noreturn]] void bad(const std::string& what, const std::string& subscripts,
                      const std::string& fix) {
  throw ValueError("[einsum] " + what + " Got '" + subscripts + "'; " + fix);
}

// Splits one term at its `...` (at most one, as NumPy), checking the symbols.
std::pair<std::string, std::optional<std::string>> split_ellipsis(const std::string& t,
                                                                  const std::string& subscripts) {
  auto e = t.find("...");
  std::string head = e == std::string::npos ? t : t.substr(0, e);
  std::optional<std::string> tail;
  if (e != std::string::npos) tail = t.substr(e + 3);
  for (const std::string* part : {&head, tail ? &*tail : nullptr}) {
    if (!part) continue;
    for (char c : *part) {
      if (c == '.') bad("Invalid Ellipses.", subscripts, "expected at most one '...' per term.");
      if (!std::isalpha(static_cast<unsigned char>(c)))
        bad("Character '" + std::string(1, c) + "' is not a valid symbol.", subscripts,
            "expected letters, ',', '->' and '...'.");
    }
  }
  return {head, tail};
}

Parsed parse(const std::string& subscripts, const std::vector<Array>& operands) {
  std::string spec;
  for (char c : subscripts)
    if (c != ' ') spec += c;
  auto arrow = spec.find("->");
  if (arrow != std::string::npos && spec.find("->", arrow + 2) != std::string::npos)
    bad("Subscripts can only contain one '->'.", subscripts, "expected inputs->output.");
  std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  if (operands.empty()) bad("No input operands.", subscripts, "expected at least one array.");
  if (terms.size() != operands.size())
    bad("Number of einsum subscripts must be equal to the number of operands. The subscripts "
        "name " +
            std::to_string(terms.size()) + " operands and " + std::to_string(operands.size()) +
            " were given.",
        subscripts, "expected one comma-separated term per operand.");
  Parsed p;
  int width = 0;  // dims under the widest ellipsis
  std::vector<std::pair<std::string, std::optional<std::string>>> split;
  for (size_t i = 0; i < terms.size(); ++i) {
    split.push_back(split_ellipsis(terms[i], subscripts));
    auto& [head, tail] = split.back();
    int named = static_cast<int>(head.size() + (tail ? tail->size() : 0));
    int nd = operands[i].ndim();
    if (tail ? named > nd : named != nd)
      bad("Einstein sum subscript '" + terms[i] +
              "' does not contain the correct number of indices for operand " + std::to_string(i) +
              ".",
          subscripts,
          "expected " + std::to_string(nd) + " labels (operand " + std::to_string(i) +
              " has rank " + std::to_string(nd) + ").");
    if (tail) width = std::max(width, nd - named);
  }
  std::string ell;
  for (int k = 0; k < width; ++k) ell += ellipsis_label(k);
  for (size_t i = 0; i < split.size(); ++i) {
    auto& [head, tail] = split[i];
    if (!tail) {
      p.ins.push_back(head);
      continue;
    }
    int k = operands[i].ndim() - static_cast<int>(head.size() + tail->size());
    p.ins.push_back(head + ell.substr(ell.size() - static_cast<size_t>(k)) + *tail);
  }
  if (arrow != std::string::npos) {
    auto [head, tail] = split_ellipsis(spec.substr(arrow + 2), subscripts);
    p.out = tail ? head + ell + *tail : head;  // no `...`: ellipsis dims are summed
    for (size_t a = 0; a < p.out.size(); ++a) {
      char c = p.out[a];
      if (p.out.find(c, a + 1) != std::string::npos)
        bad("Output character '" + std::string(1, c) + "' appeared more than once in the output.",
            subscripts, "expected each output label once.");
      bool seen = std::any_of(p.ins.begin(), p.ins.end(),
                              [&](const std::string& s) { return s.find(c) != std::string::npos; });
      if (!seen)
        bad("Output character '" + std::string(1, c) + "' did not appear in the input.", subscripts,
            "expected output labels taken from the inputs.");
    }
  } else {  // implicit: the ellipsis, then the letters seen once, sorted
    std::map<char, int> count;
    for (const auto& s : p.ins)
      for (char c : s)
        if (std::isalpha(static_cast<unsigned char>(c))) ++count[c];
    p.out = ell;
    for (auto [c, n] : count)
      if (n == 1) p.out += c;
  }
  return p;
}

// Takes the diagonal of each label repeated within the term (as jnp: mask and sum).
Term diagonals(Term t, const std::string& subscripts, int operand) {
  for (;;) {
    int p = -1, q = -1;
    for (int a = 0; a < static_cast<int>(t.labels.size()) && p < 0; ++a) {
      auto b = t.labels.find(t.labels[a], a + 1);
      if (b != std::string::npos) p = a, q = static_cast<int>(b);
    }
    if (p < 0) return t;
    if (t.x.shape()[p] != t.x.shape()[q])
      bad("Size of label '" + show(std::string(1, t.labels[p])) + "' for operand " +
              std::to_string(operand) + " (" + std::to_string(t.x.shape()[q]) +
              ") does not match previous terms (" + std::to_string(t.x.shape()[p]) + ").",
          subscripts, "expected a repeated label to name dims of one size.");
    char c = t.labels[p];
    t.x = diagonal(t.x, 0, p, q);
    t.labels.erase(static_cast<size_t>(q), 1);
    t.labels.erase(static_cast<size_t>(p), 1);
    t.labels += c;
  }
}

}  // namespace

Array einsum(const std::string& subscripts, const std::vector<Array>& operands,
             const EinsumOptions& o) {
  Parsed ps = parse(subscripts, operands);
  const std::string& out = ps.out;
  std::vector<Term> terms;
  std::map<char, int64_t> sizes;
  for (size_t i = 0; i < operands.size(); ++i) {
    Term t = diagonals({operands[i], ps.ins[i]}, subscripts, static_cast<int>(i));
    for (size_t a = 0; a < t.labels.size(); ++a) {
      int64_t n = t.x.shape()[a];
      auto [it, fresh] = sizes.emplace(t.labels[a], n);
      if (fresh || it->second == n || n == 1) continue;
      if (it->second != 1)
        bad("Size of label '" + show(std::string(1, t.labels[a])) + "' for operand " +
                std::to_string(i) + " (" + std::to_string(n) + ") does not match previous terms (" +
                std::to_string(it->second) + ").",
            subscripts, "expected one size per label (or 1, which broadcasts).");
      it->second = n;
    }
    terms.push_back(std::move(t));
  }
  // A size-1 dim against a larger one broadcasts: drop it (a sum over one element).
  for (auto& t : terms) {
    std::string keep;
    for (size_t a = 0; a < t.labels.size(); ++a)
      if (!(t.x.shape()[a] == 1 && sizes[t.labels[a]] > 1)) keep += t.labels[a];
    if (keep.size() == t.labels.size()) continue;
    std::vector<int> axes;
    for (size_t a = 0; a < t.labels.size(); ++a)
      if (t.x.shape()[a] == 1 && sizes[t.labels[a]] > 1) axes.push_back(static_cast<int>(a));
    t.x = sum(t.x, axes, {.dtype = t.x.dtype()});
    t.labels = keep;
  }
  auto out_s = canonicalize_sharding(o.out_sharding, "einsum");
  const bool one_contraction = terms.size() == 2;
  while (terms.size() > 1) {
    size_t i = 0, j = 1;
    if (o.optimize == EinsumPath::Greedy) {  // opt_einsum's greedy choice
      std::tuple<int, double, size_t, size_t> best{2, 0, 0, 1};
      for (size_t a = 0; a < terms.size(); ++a)
        for (size_t b = a + 1; b < terms.size(); ++b) {
          std::string keep = out;
          for (size_t k = 0; k < terms.size(); ++k)
            if (k != a && k != b) keep += terms[k].labels;
          bool shared = std::any_of(terms[a].labels.begin(), terms[a].labels.end(), [&](char c) {
            return terms[b].labels.find(c) != std::string::npos;
          });
          std::string res;
          for (char c : terms[a].labels + terms[b].labels)
            if (keep.find(c) != std::string::npos && res.find(c) == std::string::npos) res += c;
          double rs = size_of(res, sizes);
          double cost =
              shared ? rs - size_of(terms[a].labels, sizes) - size_of(terms[b].labels, sizes) : rs;
          std::tuple<int, double, size_t, size_t> key{shared ? 0 : 1, cost, a, b};
          if (key < best) best = key;
        }
      i = std::get<2>(best);
      j = std::get<3>(best);
    }
    std::string keep = out;
    for (size_t k = 0; k < terms.size(); ++k)
      if (k != i && k != j) keep += terms[k].labels;
    Term r = sum_unique(terms[j], keep + terms[i].labels);
    Term l = sum_unique(terms[i], keep + r.labels);
    PairPlan p = plan_pair(l, r, keep);
    bool last = terms.size() == 2;
    DotOptions step{.preferred_element_type = o.preferred_element_type};
    if (last && out_s)
      step.out_sharding = permuted(*out_s, out, p.res);  // the contract
    else if (!(last && one_contraction) && !natural_accepts(l, r, p))
      step.out_sharding = chosen_layout(l, r, p);  // an intermediate: never refused
    Term t{dot_general(l.x, r.x, p.dims, step), p.res};
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(j));
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(i));
    if (o.optimize == EinsumPath::Greedy)
      terms.push_back(std::move(t));
    else
      terms.insert(terms.begin(), std::move(t));
  }
  Term t = terms[0];
  bool reduces = std::any_of(t.labels.begin(), t.labels.end(),
                             [&](char c) { return out.find(c) == std::string::npos; });
  if (reduces) {  // one operand: the sum lays its result out as asked
    std::vector<int> axes;
    std::string rest;
    for (int a = 0; a < static_cast<int>(t.labels.size()); ++a)
      if (out.find(t.labels[a]) == std::string::npos)
        axes.push_back(a);
      else
        rest += t.labels[a];
    ReduceOptions ro{.dtype = t.x.dtype()};
    if (out_s) ro.out_sharding = permuted(*out_s, out, rest);
    t = {sum(t.x, axes, ro), rest};
  }
  std::vector<int> perm;
  bool identity = true;
  for (char c : out) {
    perm.push_back(static_cast<int>(t.labels.find(c)));
    identity = identity && perm.back() == static_cast<int>(perm.size()) - 1;
  }
  Array r = identity ? t.x : transpose(t.x, perm);
  if (out_s && operands.size() == 1 && !reduces)
    r = reshard(r, std::holds_alternative<PartitionSpec>(o.out_sharding)
                       ? Placement(std::get<PartitionSpec>(o.out_sharding))
                       : Placement(std::get<NamedSharding>(o.out_sharding)));
  return r;
}

}  // namespace tsr
