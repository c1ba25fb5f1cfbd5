// Scenario S2 (SCENARIOS.md, manual-spmd §5.7, JAX issue #28260): inside a shard_map
// over mesh axis x, linearize f at a primal p that every device shares (invariant over
// x), apply the linear map to t, which differs per device (varying over x), and
// transpose it:
//
//   def m(p, t):
//     p = jax.lax.pvary(p, 'x')        # the fix that 0.6.0 made necessary
//     out_p, fwd = jax.linearize(f, p)
//     out_t = fwd(t)
//     bwd = jax.linear_transpose(fwd, p)
//     return bwd(out_t)
//
// A tangent has its primal's type, varying axes included, so without the pvary the
// linear map refuses t and its error names the fix; with it the program prints [4, 4].
#include <iostream>
#include <string>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

Array f(const Array& x) { return mean(x * x); }

// m(p, t) with p closed over; `fix` applies pvary to p first.
Array run(bool fix) {
  Array p = array<float>({1.f});  // closed over: an invariant block f32[1]
  auto m = [&](const Array& t) {
    Array q = fix ? pvary(p, "x") : p;
    auto [out_p, fwd] = linearize(f, q);
    Array out_t = fwd(t);
    auto bwd = linear_transpose(fwd, q);
    return std::get<0>(bwd(out_t));
  };
  return shard_map(m, {.in_specs = P("x"), .out_specs = P("x")})(device_put(ones({2}), P("x")));
}

std::string str(const Array& a) {
  std::string s = "[";
  for (float v : a.to_vector<float>()) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
  return s + "]";
}

}  // namespace

int main() {
  MeshScope scope(make_mesh({2}, {"x"}));
  std::cout << "with pvary(p, \"x\"):    " << str(run(true)) << "\n";
  try {
    std::cout << str(run(false)) << "\n";
  } catch (const ValueError& e) {
    std::cout << "without it, the error: " << e.what() << "\n";
  }
  return 0;
}
