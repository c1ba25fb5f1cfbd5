// Rules of sort, top_k and searchsorted (spec §12.12): the sorted axis must be
// unsharded (E15, E16) and sort operands must share one sharding; searchsorted's
// table is gathered (replicated) for the kernel and the output follows the queries.
#include "tsr/prims/sort.h"

#include "tsr/core/trace.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/gather_scatter.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
bool register_all() {
  for (const char* n : {"sort", "top_k", "searchsorted"}) register_primitive(n);
  declare_ad("sort", AdKind::Differentiable);
  declare_ad("top_k", AdKind::Differentiable);
  declare_ad("searchsorted", AdKind::NonDifferentiable,
             "int32 insertion indices have no tangent space");
  return true;
}
const bool registered = register_all();
}  // namespace

// ---- sort ----------------------------------------------------------------------

std::vector<ArrayType> Sort::infer(const std::vector<ArrayType>& in) const {
  if (in.empty())
    throw TypeError("[sort] sort needs at least one operand. Got none; expected one or more.");
  const ArrayType& x = in[0];
  if (num_keys_ < 1 || num_keys_ > static_cast<int>(in.size()))
    throw ValueError("[sort] num_keys must be in [1, number of operands]. Got num_keys=" +
                     std::to_string(num_keys_) + " for " + std::to_string(in.size()) +
                     " operands; expected 1 <= num_keys <= " + std::to_string(in.size()) + ".");
  if (dimension_ < 0 || dimension_ >= x.ndim())
    throw ValueError("[sort] dimension " + std::to_string(dimension_) + " is out of range. Got " +
                     x.str() + "; expected a dimension in [0, " + std::to_string(x.ndim()) + ").");
  for (const auto& t : in)
    if (t.shape != x.shape)
      throw TypeError("[sort] sort operands must all have the same shape. Got " + x.str() +
                      " and " + t.str() + "; expected equal shapes.");
  no_unreduced("sort", in);
  const NamedSharding* s = nullptr;
  for (const auto& t : in) {
    if (t.sharding.mesh().empty()) continue;
    if (!entries_of(t)[dimension_].is_none())
      throw ShardingTypeError(
          "[sort] Arguments to sort must be unsharded over the sorting dimension. Got arg "
          "sharding=" +
          t.sharding.str() + " and sorting dimension=" + std::to_string(dimension_) +
          ". Reshard the operand to unsharded on that dimension first.");
    if (!s) s = &t.sharding;
  }
  for (const auto& t : in) {
    if (t.sharding.mesh().empty() || t.sharding == *s) continue;
    std::string list;
    for (const auto& u : in)
      if (!u.sharding.mesh().empty()) list += (list.empty() ? "" : ", ") + u.sharding.str();
    throw ShardingTypeError("[sort] Arguments to sort must have equal shardings, got: [" + list +
                            "]. Reshard the operands to one sharding first.");
  }
  AbstractMesh mesh = rule_mesh(in);
  std::vector<PartitionEntry> e(x.shape.size());
  if (s)
    for (const auto& t : in)
      if (!t.sharding.mesh().empty()) {
        e = entries_of(t);
        break;
      }
  std::vector<ArrayType> out;
  for (const auto& t : in) out.push_back(make_type(t.shape, t.dtype, t.weak, mesh, e));
  return out;
}

Lowering Sort::partition(const std::vector<ArrayType>& in,
                         const std::vector<ArrayType>& out) const {
  Lowering l;
  for (const auto& t : out) {
    l.in.push_back(t.sharding.spec());
    l.out.push_back(t.sharding.spec());
  }
  return l;
}

std::string Sort::params() const {
  return "dimension=" + std::to_string(dimension_) +
         " is_stable=" + (is_stable_ ? "True" : "False") + " num_keys=" + std::to_string(num_keys_);
}

// ---- top_k ---------------------------------------------------------------------

std::vector<ArrayType> TopK::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (x.ndim() == 0)
    throw TypeError("[top_k] top_k operand must have >= 1 dimension. Got " + x.str() +
                    "; expected an array of rank >= 1.");
  int axis = x.ndim() - 1;
  if (k_ < 0 || k_ > x.shape[axis])
    throw ValueError(
        "[top_k] k must be in [0, size of the last axis]. Got k=" + std::to_string(k_) + " for " +
        x.str() + "; expected 0 <= k <= " + std::to_string(x.shape[axis]) + ".");
  if (x.dtype == DType::Bool)
    throw TypeError("[top_k] top_k does not accept bool. Got " + x.str() +
                    "; expected a numeric array. Convert with astype(int32).");
  no_unreduced("top_k", in);
  auto e = entries_of(x);
  if (!e[axis].is_none())
    throw ShardingTypeError(
        "[top_k] The input should be unsharded over the axis along which to compute the top_k "
        "values. Got input type=" +
        x.str() + " and axis=" + std::to_string(axis) +
        ". Reshard the input to unsharded on that axis first.");
  Shape shape = x.shape;
  shape[axis] = k_;
  AbstractMesh mesh = rule_mesh(in);
  return {make_type(shape, x.dtype, x.weak, mesh, e),
          make_type(shape, DType::Int32, false, mesh, e)};
}

Lowering TopK::partition(const std::vector<ArrayType>& in,
                         const std::vector<ArrayType>& out) const {
  return {{in[0].sharding.spec()}, {out[0].sharding.spec(), out[1].sharding.spec()}};
}

std::string TopK::params() const { return "k=" + std::to_string(k_); }

// ---- searchsorted ----------------------------------------------------------------

std::vector<ArrayType> SearchSorted::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &a = in.at(0), &v = in.at(1);
  if (a.ndim() != 1)
    throw ValueError("[searchsorted] sorted array must be 1-D. Got " + a.str() +
                     "; expected a rank-1 array (ravel it first).");
  if (a.dtype != v.dtype)
    throw TypeError("[searchsorted] sorted array and query dtypes differ. Got " + a.str() +
                    " and " + v.str() + "; expected one dtype (promote them first).");
  no_unreduced("searchsorted", in);
  return {make_type(v.shape, DType::Int32, false, rule_mesh(in), entries_of(v))};
}

Lowering SearchSorted::partition(const std::vector<ArrayType>& in,
                                 const std::vector<ArrayType>& out) const {
  // Every query may land anywhere in the table: the kernel needs it whole.
  return {{PartitionSpec(), in[1].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string SearchSorted::params() const {
  return std::string("side=") + (right_ ? "'right'" : "'left'");
}

// ---- autodiff rules ----------------------------------------------------------------
// lax's _sort_jvp and _top_k_jvp: tangents follow the values through the permutation
// (a gather along the sorted dim); integer operands and top_k's indices get none.

std::vector<Array> Sort::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                             std::vector<Array>& outs) const {
  // One sort with an iota appended gives the outputs and the permutation; the iota
  // takes the operands' layout, since sort wants equal shardings.
  const Array& x = primals[0];
  const ArrayType& t = x.type();
  Array iota;
  if (t.sharding.mesh().empty()) {
    iota = broadcasted_iota(DType::Int32, x.shape(), dimension_);
  } else {
    PartitionSpec spec = spec_of(entries_of(t));
    bool concrete = !current_trace() && x.sharding().concrete_mesh();
    iota = broadcasted_iota(DType::Int32, x.shape(), dimension_,
                            concrete ? NamedSharding(*x.sharding().concrete_mesh(), spec)
                                     : NamedSharding(t.sharding.mesh(), spec));
    // Sort wants its operands' shardings equal, reduced sets included.
    if (!t.sharding.spec().reduced().empty()) {
      ArrayType it = t;
      it.dtype = DType::Int32;
      it.weak = false;
      iota = ad::coerce(iota, it, "sort", "value");
    }
  }
  std::vector<Array> in = primals;
  in.push_back(iota);
  std::vector<Array> r =
      detail::bind(std::make_shared<Sort>(dimension_, is_stable_, num_keys_), in);
  Array perm = r.back();
  r.pop_back();
  outs = r;
  std::vector<Array> touts(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    if (tangents[i].valid()) touts[i] = gather_along(tangents[i], perm, dimension_, outs[i].type());
  return touts;
}

std::vector<Array> TopK::jvp(const std::vector<Array>&, const std::vector<Array>& tangents,
                             std::vector<Array>& outs) const {
  return {gather_along(tangents[0], outs[1], outs[0].ndim() - 1, outs[0].type()), Array()};
}

// ---- Batching rules (vmap): sort's operands all batched at 0 (one shape), the sorted
// dimension shifted; top_k works on the last axis, which the batch at 0 leaves alone;
// searchsorted batches over v elementwise, and loops over a batched `sorted`.

detail::Batched Sort::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<Array> ins;
  for (size_t i = 0; i < args.size(); ++i) ins.push_back(detail::batch_at_front(args[i], dims[i]));
  auto p = std::make_shared<Sort>(dimension_ + 1, is_stable_, num_keys_);
  std::vector<Array> outs = detail::bind(p, ins);
  return {outs, std::vector<int>(outs.size(), 0)};
}

detail::Batched TopK::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  std::vector<Array> outs = detail::bind(shared_from_this(), {detail::move_batch(args[0], dims[0], 0)});
  return {outs, {0, 0}};
}

detail::Batched SearchSorted::batch(const std::vector<Array>& args,
                                    const std::vector<int>& dims) const {
  if (dims[0] >= 0) return detail::batch_by_loop(*this, args, dims);
  return {{detail::bind1(shared_from_this(), args)}, {dims[1]}};
}

}  // namespace tsr::prim
