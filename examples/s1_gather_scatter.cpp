// Scenario S1 (SCENARIOS.md): swap columns of a sharded matrix by index arrays
// that are sharded too, eagerly and under jit:
//
//   x_a_j = x.at[:, j].get(out_sharding=typeof(i).sharding)
//   return x.at[:, i].set(x_a_j)
//
// and the vmap half, one row at a time under jit(vmap(...)):
//
//   x_j = x.at[j].get(out_sharding=typeof(x).sharding)
//   return x.at[i].set(x_j)
//
// JAX 0.6.0 failed with "sharding rule for scatter is not implemented"; Tessera
// has a rule for gather and scatter (and their batching rules), and names the fix
// where the result's sharding is truly ambiguous.
#include <iostream>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

Array swap_columns(const Array& x, const Array& i, const Array& j) {
  Array x_a_j = x.at(all, j).get({.out_sharding = typeof(i).sharding});
  return x.at(all, i).set(x_a_j);
}

// One row: x f32[3], i and j scalars (the batch dimension is vmap's).
Array swap_in_row(const Array& x, const Array& i, const Array& j) {
  Array x_j = x.at(j).get({.out_sharding = typeof(x).sharding});
  return x.at(i).set(x_j);
}

void print(const char* title, const Array& a) {
  std::cout << title << " : " << typeof(a) << "\n";
  auto v = a.to_vector<float>();
  for (int64_t r = 0; r < a.shape()[0]; ++r) {
    std::cout << "  ";
    for (int64_t c = 0; c < a.shape()[1]; ++c) std::cout << v[r * a.shape()[1] + c] << " ";
    std::cout << "\n";
  }
}

}  // namespace

int main() {
  tsr::init({.num_cpu_devices = 2});
  Mesh mesh = make_mesh({2}, {"x"});
  MeshScope scope(mesh);

  Array x = device_put(arange(12.0f).reshape({4, 3}), P("x"));
  Array i = device_put(array<int32_t>({0, 2}, {2}), P("x"));
  Array j = device_put(array<int32_t>({1, 0}, {2}), P("x"));
  std::cout << "typeof(i) = " << typeof(i) << ", typeof(j) = " << typeof(j) << "\n";
  print("x", x);

  print("eager: x.at(all, i).set(x.at(all, j).get(out_sharding))", swap_columns(x, i, j));
  auto f = jit(swap_columns);
  print("jit", f(x, i, j));
  std::cout << "\nthe jitted program:\n" << f.lower(x, i, j).as_text() << "\n";

  // The vmap half: per row r, x[r, i[r]] = x[r, j[r]]; the rows stay on their devices.
  Array ri = device_put(array<int32_t>({0, 2, 1, 2}, {4}), P("x"));
  Array rj = device_put(array<int32_t>({1, 0, 2, 2}, {4}), P("x"));
  auto f2 = jit(vmap(swap_in_row));
  print("jit(vmap(swap_in_row)) with i = [0 2 1 2], j = [1 0 2 2]", f2(x, ri, rj));
  std::cout << "\nthe jitted vmap:\n" << f2.lower(x, ri, rj).as_text() << "\n";

  // Without out_sharding the gather's result sharding is ambiguous: (x, x).
  try {
    x.at(all, j).get();
  } catch (const ShardingTypeError& e) {
    std::cout << "without out_sharding: ShardingTypeError: " << e.what() << "\n";
  }
  return 0;
}
