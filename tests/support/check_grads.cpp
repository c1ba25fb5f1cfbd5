#include "support/check_grads.h"

#include <gtest/gtest.h>

namespace tsr::gradcheck {

namespace {

bool is_float(const Array& a) { return a.valid() && is_floating(a.dtype()); }

}  // namespace

void check_grads(const detail::FlatFn& f, const std::vector<Array>& args, const GradCheck& o,
                 const std::string& what) {
  CheckGradsOptions co;
  co.modes.clear();
  if (o.fwd) co.modes.push_back(GradMode::Fwd);
  if (o.rev || !o.fwd) co.modes.push_back(GradMode::Rev);
  co.atol = o.atol;
  co.rtol = o.rtol;
  co.eps = o.eps;
  co.finite_differences = o.fd;
  try {
    // Reverse mode alone is checked to first order (the suites' RevOnly records).
    detail::check_grads_flat(f, args, o.fwd ? o.order : 1, co);
  } catch (const AssertionError& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

Derivatives derivatives(const detail::FlatFn& f, const std::vector<Array>& args, bool rev,
                        bool fwd) {
  Derivatives d;
  std::vector<Array> v;
  for (size_t i = 0; i < args.size(); ++i)
    v.push_back(is_float(args[i]) ? direction_like(args[i], 1 + static_cast<int>(i)) : Array());
  if (fwd) d.tangents = detail::jvp_flat(f, args, v).second;
  if (!rev) return d;
  auto [outs, vjp] = detail::vjp_flat(f, args);
  std::vector<Array> ct;
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!is_float(outs[j])) {
      ct.push_back(zeros_like(outs[j]));
      continue;
    }
    Array c = direction_like(outs[j], 7 + static_cast<int>(j));
    ArrayType want = vjp->in_types()[j];
    if (!want.sharding.mesh().empty() && !(typeof(c).sharding == want.sharding))
      c = reshard(c, want.sharding);
    ct.push_back(c);
  }
  d.cotangents = (*vjp)(ct);
  return d;
}

}  // namespace tsr::gradcheck
