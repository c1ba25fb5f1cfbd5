// The control-flow entry points over flat leaves: argument checks with JAX's texts,
// the bodies traced at the operands' types in the current context (a shard_map body,
// a vmap, a jit), captured arrays passed as leading operands, and the bind.
#include <algorithm>

#include "tsr/control_flow.h"
#include "tsr/core/primitive.h"
#include "tsr/core/trace.h"
#include "tsr/error.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/control_flow.h"
#include "tsr/transforms/ad.h"

namespace tsr::detail {

namespace {
// The operands' types as the enclosing trace sees them: a constant made in a shard_map
// body is an invariant block on its manual mesh, so it can be a carry or an operand.
std::vector<ArrayType> types_of(const std::vector<Array>& xs) {
  std::vector<ArrayType> t;
  for (const auto& x : xs) t.push_back(seen_type(x));
  return t;
}
}  // namespace

Array leading_slice(const Array& x, int64_t from, int64_t to) {
  Shape start(x.shape().size(), 0), limit = x.shape();
  start[0] = from;
  limit[0] = to;
  return slice(x, start, limit);
}

void check_map_leaves(const std::vector<Array>& leaves) {
  for (const auto& x : leaves)
    if (x.ndim() > 0 && !entries_of(x.type())[0].axes().empty())
      throw ValueError(
          "[map] 0th dimension of leaf passed to `tsr::map` should be replicated. Got " +
          short_type(x.type()) + " (" + x.type().sharding.spec().repr() +
          "); expected dim 0 unsharded. Reshard it (tsr::reshard), or vmap over a "
          "sharded dimension instead.");
}

void check_same_structure(const tree::Structure& a, const tree::Structure& b, const char* api,
                          const std::string& what) {
  if (a == b) return;
  throw TypeError(std::string("[") + api + "] " + what + " must have same type structure, got " +
                  a.str() + " and " + b.str() +
                  ". Got different trees; expected the same containers and leaf counts. Return "
                  "the same tree from both.");
}

Array cond_index(const Array& pred) {
  if (pred.ndim() != 0)
    throw TypeError("[cond] Pred must be a scalar, got " + short_type(pred.type()) +
                    ". Got a non-scalar predicate; expected a bool or number scalar. Reduce it "
                    "first (tsr::any, tsr::all) or use tsr::where for an elementwise choice.");
  if (pred.dtype() == DType::Bool) return astype(pred, DType::Int32);
  if (!is_integer(pred.dtype()) && !is_floating(pred.dtype()))
    throw TypeError(std::string("[cond] Pred type must be either boolean or number, got ") +
                    dtype_name(pred.dtype()) +
                    ". Got that dtype; expected bool or a number. "
                    "Compare it to get a bool.");
  return astype(not_equal(pred, 0), DType::Int32);
}

Array switch_index(const Array& index, size_t n) {
  if (n == 0)
    throw ValueError(
        "[switch_case] Empty branch sequence. Got no branches; expected at least one. Pass "
        "the branches to choose from.");
  if (index.ndim() != 0)
    throw TypeError("[switch_case] Branch index must be scalar, got " + short_type(index.type()) +
                    ". Got a non-scalar index; expected an integer scalar. Index one element "
                    "or use tsr::select_n for an elementwise choice.");
  if (!is_integer(index.dtype()))
    throw TypeError(std::string("[switch_case] Index type must be an integer, got ") +
                    dtype_name(index.dtype()) +
                    ". Got that dtype; expected an integer scalar. astype(index, tsr::int32).");
  // As JAX: an out-of-range index takes the first or last branch.
  return clamp(0, astype(index, DType::Int32), static_cast<int64_t>(n) - 1);
}

std::vector<Array> switch_flat(const Array& index, const std::vector<FlatFn>& branches,
                               const std::vector<Array>& ops, const char* api,
                               const std::function<void()>& check) {
  std::vector<ArrayType> in_t = types_of(ops);
  std::vector<Program> progs;
  for (const auto& f : branches) progs.push_back(trace_program(f, in_t));
  check();
  // Every branch takes every operand: the operands, then each branch's captured arrays.
  std::vector<Array> args{index};
  args.insert(args.end(), ops.begin(), ops.end());
  for (const auto& p : progs) args.insert(args.end(), p.consts.begin(), p.consts.end());
  std::vector<prim::ProgramPtr> closed;
  for (size_t b = 0; b < progs.size(); ++b) {
    Program q = progs[b];
    for (size_t c = 0; c < progs.size(); ++c) {
      if (c == b) {
        q.in_vars.insert(q.in_vars.end(), progs[b].const_vars.begin(), progs[b].const_vars.end());
        continue;
      }
      for (const auto& v : progs[c].const_vars)
        q.in_vars.push_back(std::make_shared<Var>(Var{v->type}));
    }
    q.const_vars.clear();
    q.consts.clear();
    closed.push_back(std::make_shared<const Program>(std::move(q)));
  }
  (void)api;
  return detail::bind(std::make_shared<prim::Cond>(std::move(closed)), args);
}

std::vector<Array> while_flat(const FlatFn& cond, const FlatFn& body,
                              const std::vector<Array>& init) {
  std::vector<ArrayType> in_t = types_of(init);
  Program cp = trace_program(cond, in_t);
  Program bp = trace_program(body, in_t);
  if (cp.out_vars.size() != 1)
    throw TypeError("[while_loop] cond_fun must return a boolean scalar, but got " +
                    std::to_string(cp.out_vars.size()) +
                    " outputs. Got that; expected one bool[]. Return one predicate.");
  std::vector<Array> args = cp.consts;
  args.insert(args.end(), bp.consts.begin(), bp.consts.end());
  args.insert(args.end(), init.begin(), init.end());
  const size_t ncc = cp.consts.size(), nbc = bp.consts.size();
  return detail::bind(
      std::make_shared<prim::While>(std::make_shared<const Program>(lift_consts(cp)),
                                    std::make_shared<const Program>(lift_consts(bp)), ncc, nbc),
      args);
}

std::vector<Array> scan_flat(const FlatFn& body, const std::vector<Array>& init,
                             const std::vector<Array>& xs, const ScanOptions& o,
                             const std::function<size_t()>& n_carry_out) {
  int64_t length = 0;
  if (xs.empty()) {
    if (!o.length)
      throw ValueError(
          "[scan] scan got no values to scan over and `length` not provided. Got xs with no "
          "leaves; expected xs or .length. Pass ScanOptions{.length = n}.");
    length = *o.length;
  } else {
    std::vector<std::string> lens;
    for (const auto& x : xs) {
      if (x.ndim() == 0)
        throw ValueError(
            "[scan] scan got value with no leading axis to scan over: " + short_type(x.type()) +
            ". Got a scalar in xs; expected arrays of rank >= 1. Pass it as a "
            "constant the body captures instead.");
      lens.push_back(std::to_string(x.shape()[0]));
    }
    length = xs[0].shape()[0];
    bool equal =
        std::all_of(xs.begin(), xs.end(), [&](const Array& x) { return x.shape()[0] == length; });
    if (!equal || (o.length && *o.length != length)) {
      std::string l = "[";
      for (size_t i = 0; i < lens.size(); ++i) l += (i ? ", " : "") + lens[i];
      throw ValueError(std::string("[scan] ") +
                       (o.length
                            ? "scan got `length` argument of " + std::to_string(*o.length) +
                                  " which disagrees with leading axis sizes " + l + "]"
                            : "scan got values with different leading axis sizes: " + l + "]") +
                       ". Got those; expected one length along dim 0. Pass xs of equal length.");
    }
  }
  if (length < 0)
    throw ValueError("[scan] scan got a negative `length` " + std::to_string(length) +
                     ". Got that; expected >= 0. Pass a trip count.");
  std::vector<ArrayType> in_t = types_of(init);
  prim::check_xs_unsharded(types_of(xs));
  for (const auto& x : xs) in_t.push_back(prim::slice_type(seen_type(x)));
  Program bp = trace_program(body, in_t);
  const size_t nk = n_carry_out();
  std::vector<Array> args = bp.consts;
  args.insert(args.end(), init.begin(), init.end());
  args.insert(args.end(), xs.begin(), xs.end());
  const size_t nc = bp.consts.size();
  return detail::bind(std::make_shared<prim::Scan>(std::make_shared<const Program>(lift_consts(bp)),
                                                   nc, nk, length, o.reverse, o.unroll),
                      args);
}

}  // namespace tsr::detail
