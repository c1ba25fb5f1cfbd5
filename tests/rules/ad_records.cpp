// Records for the primitives that exist for autodiff (stop_gradient, custom_jvp_call,
// custom_vjp_call / custom_lin, checkpoint) and for nested jit under differentiation.
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}};
}

// softplus with JAX's documented stable rule.
const auto kSoftplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                                  [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                                    auto [x] = p;
                                    auto [tx] = t;
                                    return std::make_pair(log1p(exp(x)), tx * logistic(x));
                                  },
                                  "softplus");

// sin with a hand-written vjp that saves cos(x).
const auto kSinVjp =
    custom_vjp([](const Array& x) { return sin(x); },
               [](const Array& x) { return std::make_pair(sin(x), cos(x)); },
               [](const Array& c, const Array& g) { return std::make_tuple(g * c); });

Record rec(std::vector<std::string> prims, std::string name, std::function<Array(const Array&)> f) {
  return {std::move(prims), std::move(name),
          {{{8, 4}}},       one([f](const std::vector<Array>& a) { return f(a[0]); }),
          specs(),          2e-5};
}

}  // namespace

std::vector<Record> ad_records() {
  std::vector<Record> r = {
      rec({"stop_gradient"}, "stop_gradient",
          [](const Array& x) { return x * stop_gradient(x) + x; }),
      rec({"custom_jvp_call"}, "custom_jvp_softplus",
          [](const Array& x) { return kSoftplus(x) * x; }),
      rec({"custom_vjp_call", "custom_lin"}, "custom_vjp_sin",
          [](const Array& x) { return kSinVjp(x) * x; }),
      rec({"checkpoint"}, "checkpoint_sin_sin",
          [](const Array& x) {
            return checkpoint([](const Array& y) { return sin(sin(y)) * y; })(x);
          }),
      rec({"jit"}, "jit_nested_under_grad",
          [](const Array& x) { return jit([](const Array& y) { return sin(y) * y; })(x) + x; }),
  };
  r[0].grad = Record::Grad::NoFD;
  r[0].grad_why = "stop_gradient's derivative differs from the function's by design";
  r[2].grad = Record::Grad::RevOnly;
  r[2].grad_why = "custom_vjp functions have no forward mode (as JAX)";
  return r;
}

static const RecordSet kSet(ad_records);

}  // namespace rules
