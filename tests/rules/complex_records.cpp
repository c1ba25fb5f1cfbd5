// Records of real, imag, conj and complex (design 0023): real inputs made complex,
// carried through elementwise ops, a complex matmul (a sharded contraction sums complex
// partials) and reductions, and read back as real arrays, so every table (rules on
// each mesh, eager vs jit, gradients through complex intermediates, vmap, Auto)
// runs them.
#include "rules/record.h"

using namespace tsr;

namespace rules {

std::vector<Record> complex_records() {
  std::vector<Record> r;
  r.push_back({{"complex", "real", "imag", "conj"},
               "complex_elementwise_parts",
               {{{8, 4}}, {{8, 4}}},
               [](const std::vector<Array>& a) {
                 Array z = complex(a[0], a[1]);
                 Array w = add(multiply(exp(multiply(z, 0.1)), conj(z)), square(z));
                 return std::vector<Array>{real(w), imag(w), abs(w)};
               },
               {{P(), P()},
                {P("x"), P("x")},
                {P("x", "y"), P("x", "y")},
                {P(nullptr, "y"), P(nullptr, "y")}}});
  r.push_back({{"complex", "real", "imag"},
               "complex_matmul",
               {{{8, 4}}, {{4, 6}}},
               [](const std::vector<Array>& a) {
                 Array za = complex(a[0], sin(a[0]));
                 Array zb = complex(a[1], cos(a[1]));
                 Array p = matmul(za, zb);
                 return std::vector<Array>{real(p), imag(p)};
               },
               {{P(), P()}, {P("x"), P()}, {P(nullptr, "x"), P("x")}, {P(), P(nullptr, "y")}}});
  r.push_back({{"complex", "real", "imag"},
               "complex_reductions",
               {{{8, 6}, float32, Gen::Small}},
               [](const std::vector<Array>& a) {
                 Array z = complex(a[0], multiply(a[0], a[0]));
                 Array s = sum(z, 0), m = mean(z, 1), p = prod(add(z, 1.0), 1);
                 return std::vector<Array>{real(s), imag(m), real(p), imag(p)};
               },
               {{P()}, {P("x")}, {P(nullptr, "y")}, {P("x", "y")}}});
  return r;
}

static const RecordSet kSet(complex_records);

}  // namespace rules
