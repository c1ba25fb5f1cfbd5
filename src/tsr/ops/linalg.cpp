// Contraction front-ends: dot_general, NumPy matmul/dot, and einsum (pairwise,
// left to right; a label kept by neither later operand nor the output is summed).
#include <algorithm>
#include <map>
#include <numeric>

#include "tsr/error.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/linalg.h"

namespace tsr {
using namespace detail;

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  const DotOptions& o) {
  std::vector<Array> v = promote({lhs, rhs}, "dot_general");
  auto s = canonicalize_sharding(o.out_sharding, "dot_general");
  DType out = o.preferred_element_type ? *o.preferred_element_type : v[0].dtype();
  prim::DotDims d{dims.lhs_contracting, dims.rhs_contracting, dims.lhs_batch, dims.rhs_batch};
  return bind1(std::make_shared<prim::DotGeneral>(d, s, out), v);
}

Array matmul(const Array& a0, const Array& b0, const DotOptions& o) {
  if (a0.ndim() == 0 || b0.ndim() == 0)
    throw ValueError("[matmul] matmul does not accept scalars. Got shapes " +
                     shape_str(a0.shape()) + " and " + shape_str(b0.shape()) +
                     "; expected arrays of rank >= 1. Use multiply for scalars.");
  Array a = a0, b = b0;
  bool va = a.ndim() == 1, vb = b.ndim() == 1;
  if (va) a = reshape(a, {1, a.shape()[0]});
  if (vb) b = reshape(b, {b.shape()[0], 1});
  int ra = a.ndim(), rb = b.ndim();
  int nb = std::max(ra, rb) - 2;
  // Broadcast batch dims: prepend size-1 dims, then expand size-1 batch dims.
  Shape batch(static_cast<size_t>(nb), 1);
  for (int i = 0; i < nb; ++i) {
    int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
    int64_t sa = ia >= 0 ? a.shape()[ia] : 1, sb = ib >= 0 ? b.shape()[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      throw ValueError("[matmul] matmul batch dims are not broadcast compatible. Got shapes " +
                       shape_str(a0.shape()) + " and " + shape_str(b0.shape()) +
                       "; expected equal batch sizes or 1.");
    batch[i] = std::max(sa, sb);
  }
  auto expand = [&](const Array& x) {
    Shape shape = batch;
    shape.push_back(x.shape()[x.ndim() - 2]);
    shape.push_back(x.shape()[x.ndim() - 1]);
    if (shape == x.shape()) return x;
    return broadcast_to(x, shape);
  };
  a = expand(a);
  b = expand(b);
  std::vector<int> bd(static_cast<size_t>(nb));
  std::iota(bd.begin(), bd.end(), 0);
  Array r = dot_general(a, b, {{nb + 1}, {nb}, bd, bd}, o);
  if (va || vb) {
    Shape shape = batch;
    if (!va) shape.push_back(r.shape()[nb]);
    if (!vb) shape.push_back(r.shape()[r.ndim() - 1]);
    r = reshape(r, shape);
  }
  return r;
}

Array dot(const Array& a, const Array& b, const DotOptions& o) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b);
  if (b.ndim() == 1) return dot_general(a, b, {{a.ndim() - 1}, {0}}, o);
  return dot_general(a, b, {{a.ndim() - 1}, {b.ndim() - 2}}, o);
}

namespace {

struct Operand {
  Array x;
  std::string labels;
};

// Sums labels that appear only in this operand and not in `keep`.
Operand sum_unique(Operand op, const std::string& keep) {
  std::vector<int> axes;
  std::string rest;
  for (int i = 0; i < static_cast<int>(op.labels.size()); ++i) {
    char c = op.labels[i];
    if (keep.find(c) == std::string::npos)
      axes.push_back(i);
    else
      rest += c;
  }
  if (!axes.empty()) op.x = sum(op.x, axes);
  op.labels = rest;
  return op;
}

}  // namespace

Array einsum(const std::string& subscripts, const std::vector<Array>& operands,
             const DotOptions& o) {
  std::string spec;
  for (char c : subscripts)
    if (c != ' ') spec += c;
  auto arrow = spec.find("->");
  std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> ins;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      ins.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  if (ins.size() != operands.size())
    throw ValueError("[einsum] the subscripts name " + std::to_string(ins.size()) +
                     " operands. Got " + std::to_string(operands.size()) + " operands for '" +
                     subscripts + "'; expected one per comma-separated term.");
  std::string out;
  if (arrow != std::string::npos) {
    out = spec.substr(arrow + 2);
  } else {  // implicit output: labels seen once, sorted
    std::map<char, int> count;
    for (const auto& s : ins)
      for (char c : s) ++count[c];
    for (auto [c, n] : count)
      if (n == 1) out += c;
  }
  std::vector<Operand> ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    for (char c : ins[i])
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw ValueError("[einsum] invalid subscript '" + std::string(1, c) + "' in '" +
                         subscripts + "'. Got that character; expected letters (no ellipsis yet).");
    if (static_cast<int>(ins[i].size()) != operands[i].ndim())
      throw ValueError("[einsum] operand " + std::to_string(i) + " has rank " +
                       std::to_string(operands[i].ndim()) + " but its subscripts '" + ins[i] +
                       "' name " + std::to_string(ins[i].size()) + " dims. Fix the subscripts.");
    std::string l = ins[i];
    for (size_t a = 0; a < l.size(); ++a)
      for (size_t b = a + 1; b < l.size(); ++b)
        if (l[a] == l[b])
          throw NotImplementedError("[einsum] repeated subscript '" + std::string(1, l[a]) +
                                    "' within one operand (a trace/diagonal) is not supported "
                                    "yet. Got '" +
                                    l + "'; expected distinct labels per operand.");
    ops.push_back({operands[i], l});
  }
  bool two = ops.size() == 2;
  auto later_labels = [&](size_t from) {
    std::string s = out;
    for (size_t j = from; j < ops.size(); ++j) s += ops[j].labels;
    return s;
  };
  Operand acc = sum_unique(ops[0], later_labels(1));
  for (size_t i = 1; i < ops.size(); ++i) {
    std::string keep = later_labels(i + 1);
    Operand rhs = sum_unique(ops[i], keep + acc.labels);
    acc = sum_unique(acc, keep + rhs.labels);
    DotDimensionNumbers d;
    std::string res;
    for (int a = 0; a < static_cast<int>(acc.labels.size()); ++a) {
      char c = acc.labels[a];
      auto b = rhs.labels.find(c);
      if (b == std::string::npos) continue;
      if (keep.find(c) != std::string::npos) {
        d.lhs_batch.push_back(a);
        d.rhs_batch.push_back(static_cast<int>(b));
        res += c;
      } else {
        d.lhs_contracting.push_back(a);
        d.rhs_contracting.push_back(static_cast<int>(b));
      }
    }
    for (char c : acc.labels)
      if (rhs.labels.find(c) == std::string::npos) res += c;
    for (char c : rhs.labels)
      if (acc.labels.find(c) == std::string::npos) res += c;
    DotOptions step;
    step.preferred_element_type = o.preferred_element_type;
    bool last = i + 1 == ops.size();
    if (two && last && !std::holds_alternative<std::monostate>(o.out_sharding)) {
      // Two operands: pass out_sharding to dot_general in its natural order.
      auto s = canonicalize_sharding(o.out_sharding, "einsum");
      auto e = s->spec().normalized(static_cast<int>(out.size())).entries();
      std::vector<PartitionEntry> nat;
      for (char c : res) {
        auto p = out.find(c);
        nat.push_back(p == std::string::npos ? PartitionEntry() : e[p]);
      }
      step.out_sharding =
          NamedSharding(s->mesh(), PartitionSpec(nat, s->spec().unreduced(), s->spec().reduced()));
    }
    acc = {dot_general(acc.x, rhs.x, d, step), res};
  }
  acc = sum_unique(acc, out);
  std::vector<int> perm;
  for (char c : out) {
    auto p = acc.labels.find(c);
    if (p == std::string::npos)
      throw ValueError("[einsum] output subscript '" + std::string(1, c) +
                       "' does not appear in any input. Got '" + subscripts +
                       "'; expected output labels taken from the inputs.");
    perm.push_back(static_cast<int>(p));
  }
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  Array r = identity ? acc.x : transpose(acc.x, perm);
  if (!two && !std::holds_alternative<std::monostate>(o.out_sharding))
    r = reshard(r, std::holds_alternative<PartitionSpec>(o.out_sharding)
                       ? Placement(std::get<PartitionSpec>(o.out_sharding))
                       : Placement(std::get<NamedSharding>(o.out_sharding)));
  return r;
}

}  // namespace tsr
