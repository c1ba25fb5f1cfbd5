// float16 / bfloat16 records for every elementwise, reduction and cumulative family
// (issue 4 item 6): the driver checks each sharded layout, and jit, against the
// unsharded run. Elementwise ops round once per element, so they must match
// exactly; sums and products accumulate in float32 (as jnp) and round once, so a
// different partial-sum order can move the result by at most a rounding step.
#include "rules/record.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> one_specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}, {P("y", "x")}};
}

std::vector<std::vector<PartitionSpec>> two_specs() {
  return {{P(), P()}, {P("x"), P("x")}, {P("x", nullptr), P()}, {P("x", "y"), P("x", "y")}};
}

// A rounding step of the type, relative (the driver scales by max(1, |want|)).
double step(DType dt) { return dt == float16 ? 1e-3 : 8e-3; }

}  // namespace

std::vector<Record> half_records() {
  std::vector<Record> r;
  for (DType dt : {float16, bfloat16}) {
    std::string sfx = std::string("_") + dtype_short_name(dt);
    auto un = [&](std::string prim, std::function<Array(const Array&)> f, Gen gen,
                  double rtol = 0) {
      r.push_back({{prim},
                   prim + "_half" + sfx,
                   {{{8, 4}, dt, gen}},
                   one([f](const std::vector<Array>& a) { return f(a[0]); }),
                   one_specs(),
                   rtol});
    };
    auto bin = [&](std::string prim, std::function<Array(const Array&, const Array&)> f, Gen gen) {
      r.push_back({{prim},
                   prim + "_half" + sfx,
                   {{{8, 4}, dt, gen}, {{8, 4}, dt, gen}},
                   one([f](const std::vector<Array>& a) { return f(a[0], a[1]); }),
                   two_specs(),
                   0});
    };
    un(
        "neg", [](const Array& x) { return neg(x); }, Gen::Any);
    un(
        "abs", [](const Array& x) { return abs(x); }, Gen::Any);
    un(
        "round", [](const Array& x) { return round(x * 3.0); }, Gen::Any);
    un(
        "log", [](const Array& x) { return log(x); }, Gen::Pos);
    un(
        "sqrt", [](const Array& x) { return sqrt(x); }, Gen::Pos);
    un(
        "tanh", [](const Array& x) { return tanh(x); }, Gen::Any);
    un(
        "logistic", [](const Array& x) { return logistic(x); }, Gen::Any);
    un(
        "erf", [](const Array& x) { return erf(x); }, Gen::Any);
    un(
        "erf_inv", [](const Array& x) { return erfinv(x * 0.5); }, Gen::Small);
    un(
        "is_finite", [](const Array& x) { return isfinite(x); }, Gen::Any);
    un(
        "integer_pow", [](const Array& x) { return integer_pow(x, 3); }, Gen::Any);
    un(
        "convert_element_type", [](const Array& x) { return astype(x, float32); }, Gen::Any);
    un(
        "clamp", [](const Array& x) { return clamp(-0.5, x, 0.5); }, Gen::Any);
    bin(
        "add", [](const Array& x, const Array& y) { return x + y; }, Gen::Any);
    bin(
        "mul", [](const Array& x, const Array& y) { return x * y; }, Gen::Any);
    bin(
        "div", [](const Array& x, const Array& y) { return x / y; }, Gen::Pos);
    bin(
        "pow", [](const Array& x, const Array& y) { return power(x, y); }, Gen::Pos);
    bin(
        "max", [](const Array& x, const Array& y) { return maximum(x, y); }, Gen::Any);
    bin(
        "atan2", [](const Array& x, const Array& y) { return atan2(x, y); }, Gen::Any);
    bin(
        "lt", [](const Array& x, const Array& y) { return x < y; }, Gen::Any);
    bin(
        "select_n", [](const Array& x, const Array& y) { return where(x > y, x, y); }, Gen::Any);
    // Reductions: sums and products over sharded axes combine float32 partials.
    un(
        "reduce_sum", [](const Array& x) { return sum(x, 0); }, Gen::Small, step(dt));
    un(
        "reduce_sum", [](const Array& x) { return sum(x); }, Gen::Any, step(dt));
    r.back().name += "_all";
    un(
        "reduce_prod", [](const Array& x) { return prod(x, 1); }, Gen::Small, step(dt));
    un(
        "reduce_max", [](const Array& x) { return max(x, 0); }, Gen::Any);
    un(
        "reduce_min", [](const Array& x) { return min(x); }, Gen::Any);
    un(
        "argmax", [](const Array& x) { return argmax(x, 0); }, Gen::Any);
    un(
        "argmin", [](const Array& x) { return argmin(x, 1); }, Gen::Any);
    un(
        "reduce_sum", [](const Array& x) { return mean(x, 0); }, Gen::Any, step(dt));
    r.back().name = std::string("mean_half") + sfx;
    un(
        "reduce_sum", [](const Array& x) { return var(x); }, Gen::Small, step(dt));
    r.back().name = std::string("var_half") + sfx;
    un(
        "reduce_max", [](const Array& x) { return logsumexp(x, 1); }, Gen::Small, 2 * step(dt));
    r.back().name = std::string("logsumexp_half") + sfx;
    un(
        "reduce_sum", [](const Array& x) { return softmax(x, 0); }, Gen::Small, 2 * step(dt));
    r.back().name = std::string("softmax_half") + sfx;
    // Cumulative ops along an unsharded axis: the layout cannot change the values.
    un(
        "cumsum", [](const Array& x) { return cumsum(x, 1); }, Gen::Small);
    un(
        "cumprod", [](const Array& x) { return cumprod(x, 1, {.reverse = true}); }, Gen::Small);
    un(
        "cummin", [](const Array& x) { return cummin(x, 1); }, Gen::Any);
    un(
        "cumlogsumexp", [](const Array& x) { return cumlogsumexp(x, 1); }, Gen::Small);
    un(
        "sort", [](const Array& x) { return sort(x, 1); }, Gen::Any);
  }
  return r;
}

static const RecordSet kSet(half_records);

}  // namespace rules
