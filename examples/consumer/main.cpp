// Tessera from outside its tree: a sharded sum under jit on 8 simulated devices.
// Exits 0 when the result is right (CI runs it after installing Tessera).
#include <tsr/tsr.h>
#include <tsr/version.h>

#include <cstdio>

int main() {
  using namespace tsr;
  init({.num_cpu_devices = 8});
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(iota({16}), NamedSharding(mesh, P("x")));
  Array s = jit([](const Array& a) { return sum(a * a); })(x);
  const float v = s.item<float>();
  std::printf("Tessera %s: sum of squares of 0..15 on %d devices = %g\n", version(),
              static_cast<int>(mesh.size()), v);
  return v == 1240.0F ? 0 : 1;
}
