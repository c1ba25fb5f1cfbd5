// Records of lax.fft (design 0023 §6) through jnp.fft's front-ends: complex-to-complex
// along a sharded batch or transformed dim (the transformed dim's axes move onto a batch
// dim for the kernel), rfft2 / irfft2, and a 3-D fftn with norm="ortho", so every table
// (rules on each mesh, jit vs eager, gradients through the transposes, vmap, Auto)
// runs them.
#include "rules/record.h"
#include "tsr/fft.h"

using namespace tsr;

namespace rules {

std::vector<Record> fft_records() {
  std::vector<Record> r;
  r.push_back({{"fft"},
               "fft_c2c_last_axis",
               {{{8, 8}}},
               [](const std::vector<Array>& a) {
                 Array y = fft::fft(complex(a[0], multiply(a[0], 0.5)));
                 return std::vector<Array>{real(y), imag(fft::ifft(y, std::nullopt, 0))};
               },
               {{P()}, {P("x")}, {P(nullptr, "x")}, {P("x", "y")}, {P(Axes{"x", "y"})}}});
  r.push_back({{"fft"},
               "rfft2_irfft2",
               {{{4, 8, 6}}},
               [](const std::vector<Array>& a) {
                 Array z = fft::rfft2(a[0]);
                 Array back = fft::irfft2(multiply(z, z), Shape{8, 6});
                 return std::vector<Array>{back, imag(z)};
               },
               {{P()}, {P("x")}, {P(nullptr, "x")}, {P(nullptr, nullptr, "y")}}});
  r.push_back({{"fft"},
               "fftn_3d_ortho_odd_rfft",
               {{{4, 4, 6}}},
               [](const std::vector<Array>& a) {
                 Array z = fft::fftn(complex(a[0], cos(a[0])), std::nullopt, std::nullopt, "ortho");
                 Array o = fft::rfft(a[0], 5, 1, "forward");
                 return std::vector<Array>{real(z), imag(o)};
               },
               {{P()}, {P("x")}, {P(nullptr, "y")}, {P("x", nullptr, "y")}}});
  return r;
}

static const RecordSet kSet(fft_records);

}  // namespace rules
