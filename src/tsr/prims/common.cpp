#include "tsr/prims/common.h"

#include <set>

#include "tsr/sharding/format.h"

namespace tsr::detail {

std::vector<PartitionEntry> entries_of(const ArrayType& t) {
  std::vector<PartitionEntry> e = t.sharding.spec().normalized(t.ndim()).entries();
  e.resize(static_cast<size_t>(t.ndim()));
  return e;
}

AbstractMesh rule_mesh(const std::vector<ArrayType>& in) {
  for (const auto& t : in)
    if (!t.sharding.mesh().empty()) return t.sharding.mesh();
  return get_abstract_mesh();
}

namespace {

std::string render(const Shape& shape, DType dtype, const std::vector<PartitionEntry>& e) {
  std::string s = dtype_short_name(dtype);
  s += "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d) s += ",";
    s += std::to_string(shape[d]);
    if (d < e.size() && !e[d].axes().empty()) {
      const auto& a = e[d].axes();
      if (a.size() == 1) {
        s += "@" + a[0];
      } else {
        s += "@(";
        for (size_t i = 0; i < a.size(); ++i) s += (i ? "," : "") + a[i];
        s += ")";
      }
    }
  }
  return s + "]";
}

}  // namespace

IllegalResult::IllegalResult(std::string rendered)
    : DuplicateSpecError("[rule] illegally sharded result " + rendered),
      rendered_(std::move(rendered)) {}

ArrayType make_type(const Shape& shape, DType dtype, bool weak, const AbstractMesh& mesh,
                    const std::vector<PartitionEntry>& entries, const PartitionSpec& sets) {
  std::set<std::string> seen;
  for (const auto& e : entries)
    for (const auto& a : e.axes())
      if (!seen.insert(a).second) throw IllegalResult(render(shape, dtype, entries));
  return make_type(shape, dtype, weak, mesh, with_sets_of(entries, sets));
}

ArrayType make_type(const Shape& shape, DType dtype, bool weak, const AbstractMesh& mesh,
                    const PartitionSpec& spec) {
  if (mesh.empty()) {
    ArrayType t;
    t.shape = shape;
    t.dtype = dtype;
    t.weak = weak;
    t.sharding = type_sharding(NamedSharding(mesh, P()), shape);
    return t;
  }
  return make_type(shape, dtype, weak, NamedSharding(mesh, spec));
}

ArrayType make_type(const Shape& shape, DType dtype, bool weak, const NamedSharding& s) {
  ArrayType t;
  t.shape = shape;
  t.dtype = dtype;
  t.weak = weak;
  t.sharding = type_sharding(s, shape);
  return t;
}

PartitionSpec spec_of(const std::vector<PartitionEntry>& entries) { return PartitionSpec(entries); }

PartitionSpec with_sets_of(const std::vector<PartitionEntry>& entries, const PartitionSpec& sets) {
  return PartitionSpec(entries, sets.unreduced(), sets.reduced(), sets.unreduced_kind());
}

std::string entries_tuple(const std::vector<PartitionEntry>& e) {
  std::string s = "(";
  for (size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + e[i].repr();
  if (e.size() == 1) s += ",";
  return s + ")";
}

std::string short_type(const ArrayType& t) { return t.str(); }

int64_t entry_size(const PartitionEntry& e, const AbstractMesh& mesh) {
  int64_t k = 1;
  for (const auto& a : e.axes()) k *= mesh.axis_size(a);
  return k;
}

int norm_axis(int64_t axis, int rank, const char* op) {
  if (axis < -rank || axis >= std::max(rank, 0) || (rank == 0))
    throw ValueError(std::string("[") + op + "] axis " + std::to_string(axis) +
                     " is out of bounds for an array of rank " + std::to_string(rank) +
                     ". Got axis=" + std::to_string(axis) + "; expected -" + std::to_string(rank) +
                     " <= axis < " + std::to_string(rank) + ".");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::string p_ints(const std::vector<int64_t>& v) { return ints_tuple(v); }

std::string p_sharding(const std::optional<NamedSharding>& s) {
  return s ? s->spec().repr() : "None";
}

bool replicated_over(const ArrayType& t, const std::set<std::string>& axes) {
  for (const auto& e : entries_of(t))
    for (const auto& a : e.axes())
      if (axes.count(a)) return false;
  for (const auto& a : unreduced_of(t))
    if (axes.count(a)) return false;
  return true;
}

std::set<std::string> nary_reduced(const char* name, const std::vector<ArrayType>& in) {
  const ArrayType* first = nullptr;
  for (const auto& t : in) {
    if (reduced_of(t).empty()) continue;
    if (first && reduced_of(t) != reduced_of(*first))
      throw ShardingTypeError(std::string("[") + name +
                              "] All inputs should be reduced across the same mesh axes. Got "
                              "specs: " +
                              quoted_set(reduced_of(*first)) + ", " + quoted_set(reduced_of(t)) +
                              ". Reshard one operand so both are reduced over the same axes.");
    if (!first) first = &t;
  }
  if (!first) return {};
  const auto& red = reduced_of(*first);
  for (const auto& t : in) {
    bool clash = false;
    for (const auto& e : entries_of(t))
      for (const auto& a : e.axes()) clash = clash || red.count(a) > 0;
    for (const auto& a : t.vma) clash = clash || red.count(a) > 0;
    // The result would be sharded over axes it is reduced over: no such type exists.
    if (clash)
      throw ShardingTypeError(
          std::string("[") + name +
          "] Inputs cannot be sharded/varying on the same axes that another input is reduced "
          "on. Reshard the input which is reduced to be sharded on the mesh axes it is reduced "
          "on via `reshard(inp, P(...))`. Got input type: " +
          t.str() + " and reduced spec: " + quoted_set(red));
  }
  return red;
}

PartitionSpec layout_with_sets(const std::vector<PartitionEntry>& entries,
                               const PartitionSpec& sets) {
  std::set<std::string> red = sets.reduced();
  for (const auto& e : entries)
    for (const auto& a : e.axes()) red.erase(a);
  return PartitionSpec(entries, sets.unreduced(), red, sets.unreduced_kind());
}

void no_unreduced(const char* name, const std::vector<ArrayType>& in) {
  for (const auto& t : in)
    if (!unreduced_of(t).empty())
      throw NotImplementedError(std::string("[") + name + "] unreduced rule for " + name +
                                " is not implemented. Got input type " + t.str() +
                                "; expected no unreduced axes (" + name +
                                " is not linear, so partial values cannot pass through it). "
                                "Reduce it first with reshard(x, P(...)).");
}

// Spec §12.8: the operand's sharding, or P() when every output dim is 1; a changed
// sharded dim must stay divisible (E9).
ArrayType varying_out(const Shape& out, const ArrayType& x, const char* name, const char* prim) {
  bool ones = true;
  for (int64_t n : out) ones = ones && n == 1;
  const AbstractMesh& mesh = x.sharding.mesh().empty() ? get_abstract_mesh() : x.sharding.mesh();
  if (out.empty() || ones)
    return make_type(out, x.dtype, x.weak, mesh, with_sets_of({}, x.sharding.spec()));
  auto e = entries_of(x);
  for (int d = 0; d < x.ndim(); ++d) {
    if (out[d] == x.shape[d] || e[d].is_none()) continue;
    int64_t k = entry_size(e[d], x.sharding.mesh());
    if (out[d] % k != 0)
      throw ShardingTypeError(
          std::string("[") + prim + "] " + name + " on sharded dims where out dim (" +
          std::to_string(out[d]) + ") is not divisible by mesh axes (" + std::to_string(k) +
          ") with spec (" + (e[d].axes().size() == 1 ? e[d].axes()[0] : e[d].repr()) +
          ") is not implemented. Got input type=" + x.str() + " and output shape=" +
          shape_str(out) + ". Reshard the operand to unsharded on that dim first.");
  }
  return make_type(out, x.dtype, x.weak, mesh, with_sets_of(e, x.sharding.spec()));
}

// The operand's entries with `changed` dims unsharded: the layout the kernel needs.
PartitionSpec unshard_dims(const ArrayType& x, const std::vector<bool>& changed) {
  auto e = entries_of(x);
  for (int d = 0; d < x.ndim(); ++d)
    if (changed[d]) e[d] = PartitionEntry();
  return with_sets_of(e, x.sharding.spec());
}

// lax._validate_preferred_element_type: a float product rounded to int per
// device and then summed would differ from the oracle, so it is refused.
void check_preferred(const char* prim, DType in, DType out) {
  auto bad = [&](const std::string& what, const std::string& fix) {
    throw TypeError(std::string("[") + prim + "] " + what + " Got input dtype " + dtype_name(in) +
                    " and preferred_element_type=" + dtype_name(out) + ". " + fix);
  };
  bool int_in = is_integer(in), float_in = is_floating(in);
  if (int_in && is_floating(out)) {
  } else {
    if ((int_in && !is_integer(out)) || (float_in && !is_floating(out)) ||
        (is_complex(in) != is_complex(out)))
      bad("Input type is incompatible with `preferred_element_type`. The compatible "
          "combinations of (input_type, preferred_element_type) are (integral, integral), "
          "(integral, floating), (floating, floating), (complex, complex.",
          "Convert the result with astype after the product instead.");
    if (int_in && !is_unsigned(in) && is_unsigned(out))
      bad("`preferred_element_type` must have the same signedness as the original type.",
          "Pick a signed preferred_element_type.");
  }
  if (itemsize(out) < itemsize(in))
    bad("`preferred_element_type` must not be narrower than the original type.",
        "Pick a type at least as wide as the inputs, or astype the result.");
}

std::set<std::string> bilinear_unreduced(const char* prim, const ArrayType& l, const ArrayType& r,
                                         DType out, const char* verb) {
  const auto& ul = unreduced_of(l);
  const auto& ur = unreduced_of(r);
  const std::string pre = std::string("[") + prim + "] ";
  if (!ul.empty() && !ur.empty())
    throw ShardingTypeError(pre + "lhs or rhs passed to " + prim +
                            " cannot be unreduced. Got lhs=" + l.str() + " and rhs=" + r.str() +
                            "; expected at most one unreduced operand (" + prim +
                            " is bilinear). Reduce one with reshard(x, P(...)) first.");
  const ArrayType* uop = !ul.empty() ? &l : !ur.empty() ? &r : nullptr;
  if (!uop) return {};
  const std::set<std::string>& U = unreduced_of(*uop);
  const ArrayType& other = uop == &l ? r : l;
  if (uop->sharding.spec().unreduced_kind() != UnreducedKind::Sum || !replicated_over(other, U))
    throw ShardingTypeError(pre + "lhs or rhs passed to " + prim +
                            " cannot be unreduced. Got lhs=" + l.str() + " and rhs=" + r.str() +
                            "; expected an unreduced operand of kind sum and the other operand "
                            "replicated over " +
                            quoted_set(U) + ". Reduce it first with reshard(x, P(...)).");
  // The partials were summed in the operand's dtype (bool: or; int8: wrapping), so a
  // product in a wider dtype is not the sum of the partial products.
  if (out != uop->dtype)
    throw ShardingTypeError(pre + "an unreduced operand cannot be " + verb +
                            " into another dtype. Got " + uop->str() +
                            " with preferred_element_type=" + dtype_name(out) +
                            "; expected the operand's own dtype " + dtype_name(uop->dtype) +
                            " (its partial sums are summed in it). Reduce it first with "
                            "reshard(x, P(...)), or convert it before it becomes unreduced.");
  return U;
}

}  // namespace tsr::detail
