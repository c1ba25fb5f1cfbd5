// Rules of the elementwise primitives (spec §12.2–§12.5, §9 ur rules).
#include "tsr/prims/elementwise.h"

#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

const char* const kUnaryNames[kNumUnaryOps] = {
    "neg", "abs",   "sign",     "floor", "ceil",      "round",  "exp",    "exp2",
    "log", "log1p", "expm1",    "sqrt",  "rsqrt",     "square", "sin",    "cos",
    "tan", "tanh",  "logistic", "erf",   "is_finite", "not",    "erf_inv"};
const char* const kBinaryNames[kNumBinaryOps] = {"add", "sub", "mul",   "div", "rem", "pow",
                                                 "max", "min", "atan2", "and", "or",  "xor",
                                                 "eq",  "ne",  "lt",    "le",  "gt",  "ge"};

bool register_all() {
  for (const char* n : kUnaryNames) register_primitive(n);
  for (const char* n : kBinaryNames) register_primitive(n);
  for (const char* n : {"integer_pow", "select_n", "clamp", "convert_element_type"})
    register_primitive(n);
  return true;
}
const bool registered = register_all();

bool float_only(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Square:
    case UnaryOp::IsFinite:
    case UnaryOp::Not:
      return false;
    default:
      return true;
  }
}

ArrayType same_as(const ArrayType& x, DType dtype, bool weak) {
  ArrayType t = x;
  t.dtype = dtype;
  t.weak = weak;
  return t;
}

}  // namespace
}  // namespace tsr::prim

namespace tsr::detail {
// Spec §12.4 broadcasting_sharding_rule on same-rank operands.
std::vector<PartitionEntry> broadcast_entries(const char* name, const std::vector<ArrayType>& in,
                                              Shape& out_shape) {
  int rank = -1;
  for (const auto& t : in)
    if (t.ndim() > 0) {
      if (rank >= 0 && t.ndim() != rank) {
        std::string shapes;
        for (size_t i = 0; i < in.size(); ++i) shapes += (i ? ", " : "") + shape_str(in[i].shape);
        throw TypeError(std::string("[") + name + "] " + name +
                        ": arrays must have same number of dimensions, got " + shapes +
                        ". Reshape or expand_dims the operands to one rank (the tsr:: ops do "
                        "this for you).");
      }
      rank = t.ndim();
    }
  if (rank < 0) {
    out_shape = {};
    return {};
  }
  out_shape.assign(static_cast<size_t>(rank), 1);
  for (const auto& t : in) {
    if (t.ndim() == 0) continue;
    for (int d = 0; d < rank; ++d) {
      int64_t n = t.shape[d];
      if (n == out_shape[d] || n == 1) continue;
      if (out_shape[d] != 1) {
        std::string shapes;
        for (size_t i = 0; i < in.size(); ++i) shapes += (i ? ", " : "") + shape_str(in[i].shape);
        throw TypeError(std::string("[") + name + "] " + name +
                        " got incompatible shapes for broadcasting: " + shapes + ". Got sizes " +
                        std::to_string(out_shape[d]) + " and " + std::to_string(n) +
                        " in dimension " + std::to_string(d) + "; expected equal sizes or 1.");
      }
      out_shape[d] = n;
    }
  }
  std::vector<PartitionEntry> out(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    std::vector<const PartitionEntry*> es;
    std::vector<int64_t> ns;
    for (const auto& t : in)
      if (t.ndim() > 0) {
        es.push_back(nullptr);
        ns.push_back(t.shape[d]);
      }
    std::vector<PartitionEntry> all;
    for (const auto& t : in)
      if (t.ndim() > 0) all.push_back(entries_of(t)[d]);
    bool same = true;
    for (const auto& e : all) same = same && e == all[0];
    if (same) {
      out[d] = all[0];
      continue;
    }
    std::vector<PartitionEntry> rest;
    for (size_t i = 0; i < all.size(); ++i)
      if (!(ns[i] == 1 && all[i].is_none())) rest.push_back(all[i]);
    const PartitionEntry* pick = nullptr;
    bool conflict = false;
    for (const auto& e : rest) {
      if (e.is_none()) continue;
      if (pick && !(*pick == e)) conflict = true;
      if (!pick) pick = &e;
    }
    if (conflict) {
      std::string specs;
      bool first = true;
      for (const auto& t : in) {
        if (t.ndim() == 0) continue;
        specs += (first ? "" : ", ") + entries_tuple(entries_of(t));
        first = false;
      }
      throw ShardingTypeError(std::string("[") + name + "] " + name +
                              " got incompatible shardings for broadcasting: " + specs +
                              ". Reshard the operands to one sharding first.");
    }
    out[d] = pick ? *pick : PartitionEntry();
  }
  return out;
}

}  // namespace tsr::detail

namespace tsr::prim {
using namespace tsr::detail;
namespace {

// Spec §9 for n-ary ops: add-like ops keep identical unreduced sets; mul accepts one
// unreduced operand when the other is reduced on the same axes.
PartitionSpec ur_sets(const char* name, BinaryOp op, const std::vector<ArrayType>& in) {
  const auto& ul = unreduced_of(in[0]);
  const auto& ur = unreduced_of(in[1]);
  const auto& rl = reduced_of(in[0]);
  const auto& rr = reduced_of(in[1]);
  std::set<std::string> red;
  if (!rl.empty() && !rr.empty() && rl != rr)
    throw ShardingTypeError(
        std::string("[") + name +
        "] All inputs should be reduced across the same mesh axes. Got specs: " +
        in[0].sharding.spec().repr() + ", " + in[1].sharding.spec().repr() +
        ". Reshard one operand first.");
  red = !rl.empty() ? rl : rr;
  if (ul.empty() && ur.empty()) return PartitionSpec({}, {}, red);
  bool addlike = op == BinaryOp::Add || op == BinaryOp::Sub;
  if (addlike) {
    if (!ul.empty() && !ur.empty()) {
      if (ul != ur)
        throw ShardingTypeError(
            std::string("[") + name + "] lhs and rhs to `" + name +
            "` must be unreduced along the same mesh axes. Got lhs=" + quoted_set(ul) +
            ", rhs=" + quoted_set(ur) + ". Reshard one operand first.");
      return PartitionSpec({}, ul, {}, in[0].sharding.spec().unreduced_kind());
    }
    const char* u = ul.empty() ? "rhs" : "lhs";
    const char* o = ul.empty() ? "lhs" : "rhs";
    throw ShardingTypeError(std::string("[") + name + "] " + u + " is unreduced while " + o +
                            " is not. `" + name +
                            "` operation does not allow this because there will be implicit "
                            "communication. Please reduce " +
                            u + " via `reshard` before calling `" + name + "`.");
  }
  if (op == BinaryOp::Mul) {
    if (!ul.empty() && !ur.empty())
      throw ShardingTypeError(
          std::string("[") + name +
          "] lhs and rhs cannot be unreduced since mul is bilinear. Got lhs=" + quoted_set(ul) +
          ", rhs=" + quoted_set(ur) + ". Reduce one operand with reshard first.");
    const auto& u = ul.empty() ? ur : ul;
    const auto& r = ul.empty() ? rl : rr;
    if (r != u)
      throw ShardingTypeError(std::string("[") + name + "] " + (ul.empty() ? "LHS" : "RHS") +
                              " should be reduced along the same axes " +
                              (ul.empty() ? "RHS" : "LHS") +
                              " is unreduced on. Got lhs=" + in[0].sharding.spec().repr() +
                              " and rhs=" + in[1].sharding.spec().repr() +
                              ". Reshard the other operand with Reduced{...} on those axes.");
    return PartitionSpec({}, u, {}, UnreducedKind::Sum);
  }
  no_unreduced(name, in);
  return {};
}

}  // namespace

namespace {
// Operands shaped like the output take its layout; rank-0 ones stay whole.
Lowering like_output(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) {
  Lowering l;
  const PartitionSpec& s = out[0].sharding.spec();
  for (const auto& t : in) l.in.push_back(t.ndim() == 0 ? PartitionSpec() : s);
  l.out.push_back(s);
  return l;
}
}  // namespace

const char* unary_name(UnaryOp op) { return kUnaryNames[static_cast<int>(op)]; }
const char* binary_name(BinaryOp op) { return kBinaryNames[static_cast<int>(op)]; }
bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

std::vector<ArrayType> Unary::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (float_only(op_) && !is_floating(x.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(x.dtype) + ". Got " + x.str() +
                    "; expected a floating-point array. Convert with astype(float32).");
  if (op_ == UnaryOp::Not && is_floating(x.dtype))
    throw TypeError(std::string("[not] logical_not/bitwise not does not accept dtype ") +
                    dtype_name(x.dtype) + ". Got " + x.str() +
                    "; expected bool or an integer array. Compare with 0 first.");
  no_unreduced(name(), in);
  if (op_ == UnaryOp::IsFinite) return {same_as(x, DType::Bool, false)};
  return {x};
}

std::vector<ArrayType> IntegerPow::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (x.dtype == DType::Bool)
    throw TypeError("[integer_pow] integer_pow does not accept bool. Got " + x.str() +
                    "; expected a numeric array. Convert with astype first.");
  if (y_ < 0 && !is_floating(x.dtype))
    throw TypeError("[integer_pow] a negative exponent needs a floating-point base. Got y=" +
                    std::to_string(y_) + " and " + x.str() +
                    "; expected a float array. Convert with astype(float32).");
  no_unreduced(name(), in);
  return {x};
}

std::vector<ArrayType> Binary::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &a = in.at(0), &b = in.at(1);
  if (a.dtype != b.dtype)
    throw TypeError(std::string("[") + name() + "] " + name() +
                    " requires arguments to have the same dtypes, got " + dtype_name(a.dtype) +
                    ", " + dtype_name(b.dtype) +
                    ". Convert one with astype (the tsr:: operators promote for you).");
  bool logical = op_ == BinaryOp::And || op_ == BinaryOp::Or || op_ == BinaryOp::Xor;
  if (logical && is_floating(a.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept dtype " +
                    dtype_name(a.dtype) + ". Got " + a.str() +
                    "; expected bool or integer operands.");
  if (op_ == BinaryOp::Atan2 && !is_floating(a.dtype))
    throw TypeError(std::string("[atan2] atan2 does not accept dtype ") + dtype_name(a.dtype) +
                    ". Got " + a.str() + "; expected floating-point operands.");
  if (!logical && !is_comparison(op_) && a.dtype == DType::Bool && op_ != BinaryOp::Max &&
      op_ != BinaryOp::Min)
    throw TypeError(std::string("[") + name() + "] " + name() +
                    " does not accept dtype bool. Got " + a.str() +
                    "; expected numeric operands. Convert with astype first.");
  Shape shape;
  std::vector<PartitionEntry> e = broadcast_entries(name(), in, shape);
  PartitionSpec sets = ur_sets(name(), op_, in);
  DType dt = is_comparison(op_) ? DType::Bool : a.dtype;
  bool weak = is_comparison(op_) ? false : (a.weak && b.weak);
  return {make_type(shape, dt, weak, rule_mesh(in), e, sets)};
}

std::vector<ArrayType> SelectN::infer(const std::vector<ArrayType>& in) const {
  if (in.size() < 2)
    throw TypeError("[select_n] select_n needs a predicate and at least one case. Got " +
                    std::to_string(in.size()) + " operands; expected 2 or more.");
  const ArrayType& w = in[0];
  if (w.dtype != DType::Bool && w.dtype != DType::Int32)
    throw TypeError(std::string("[select_n] which must be boolean or int32, got ") +
                    dtype_name(w.dtype) + ". Compare to get a bool predicate.");
  if (w.dtype == DType::Bool && in.size() > 3)
    throw TypeError("[select_n] a boolean which selects between two cases. Got " +
                    std::to_string(in.size() - 1) + " cases; expected 2. Use an int32 which.");
  const ArrayType& c0 = in[1];
  for (size_t i = 2; i < in.size(); ++i)
    if (in[i].shape != c0.shape || in[i].dtype != c0.dtype)
      throw TypeError("[select_n] select cases must have the same shapes and dtypes, got " +
                      in[i].str() + " and " + c0.str() + ". Broadcast and convert them first.");
  if (w.ndim() != 0 && w.shape != c0.shape)
    throw TypeError(
        "[select_n] select `which` must be scalar or have the same shape as cases, got "
        "`which` shape " +
        shape_str(w.shape) + " but case shape " + shape_str(c0.shape) + ". Broadcast it first.");
  const NamedSharding* cs = nullptr;
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].sharding.mesh().empty()) continue;
    if (cs && !(in[i].sharding == *cs)) {
      std::string list;
      for (size_t j = 1; j < in.size(); ++j)
        list += (j > 1 ? ", " : "") + in[j].sharding.spec().repr();
      throw ShardingTypeError("[select_n] select cases must have the same shardings, got [" + list +
                              "]. Reshard the cases to one sharding.");
    }
    if (!cs) cs = &in[i].sharding;
  }
  if (w.ndim() != 0 && cs && !w.sharding.mesh().empty() &&
      (!(w.sharding.mesh() == cs->mesh()) || w.sharding.spec().entries() != cs->spec().entries()))
    throw ShardingTypeError(
        "[select_n] select `which` must be scalar or have the same sharding as "
        "cases, got `which` sharding " +
        w.sharding.spec().repr() + " but case sharding " + cs->spec().repr() +
        ". Reshard `which` to the cases' sharding.");
  std::vector<ArrayType> cases(in.begin() + 1, in.end());
  for (size_t i = 0; i < cases.size(); ++i) no_unreduced("select_n", {cases[i]});
  bool weak = true;
  for (const auto& c : cases) weak = weak && c.weak;
  if (cs) return {make_type(c0.shape, c0.dtype, weak, *cs)};
  return {make_type(c0.shape, c0.dtype, weak, rule_mesh(in), PartitionSpec())};
}

Lowering SelectN::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  return like_output(in, out);
}

std::vector<ArrayType> Clamp::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &lo = in.at(0), &x = in.at(1), &hi = in.at(2);
  for (const ArrayType* b : {&lo, &hi}) {
    if (b->dtype != x.dtype)
      throw TypeError(std::string("[clamp] clamp requires min, operand and max to have the same "
                                  "dtype. Got ") +
                      dtype_name(b->dtype) + " and " + dtype_name(x.dtype) +
                      "; expected equal dtypes. Convert with astype.");
    if (b->ndim() != 0 && b->shape != x.shape)
      throw TypeError(
          "[clamp] clamp requires min and max to be scalars or shaped like the "
          "operand. Got " +
          shape_str(b->shape) + " and " + shape_str(x.shape) + "; expected () or " +
          shape_str(x.shape) + ". Broadcast them first.");
  }
  no_unreduced("clamp", in);
  return {x};
}

Lowering Clamp::partition(const std::vector<ArrayType>& in,
                          const std::vector<ArrayType>& out) const {
  return like_output(in, out);
}

std::vector<ArrayType> Convert::infer(const std::vector<ArrayType>& in) const {
  return {same_as(in.at(0), dtype_, weak_)};
}

std::string Convert::params() const {
  return std::string("new_dtype=") + dtype_name(dtype_) + (weak_ ? " weak_type=True" : "");
}

}  // namespace tsr::prim
