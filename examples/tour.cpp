// A tour of Tessera's foundation: simulated devices, a 4x2 mesh, sharded arrays,
// their types and layouts, and resharding done by collectives on device data.
#include <iostream>

#include <tsr/tsr.h>

using namespace tsr;

namespace {

void show(const char* title, const Array& x) {
  std::cout << "\n== " << title << "\n" << visualize(x);
  std::cout << "shards:";
  for (const Shard& s : x.addressable_shards()) {
    std::cout << "\n  " << s.device.label() << " " << index_str(s.index) << " replica "
              << s.replica_id << ": [";
    auto v = s.data->to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) std::cout << (i ? " " : "") << v[i];
    std::cout << "]";
  }
  std::cout << "\n";
}

}  // namespace

int main() {
  tsr::init({.num_cpu_devices = 8});
  std::cout << "devices: " << device_count() << "\n";

  Mesh mesh = make_mesh({4, 2}, {"X", "Y"});  // Explicit axes by default
  MeshScope scope(mesh);
  std::cout << "mesh: " << mesh << "\n";

  // 0..31 laid out as 8x4, rows over X and columns over Y.
  Array x = device_put(iota({8, 4}), P("X", "Y"));
  std::cout << "typeof(x) = " << typeof(x) << "\n";
  show("x = device_put(iota({8, 4}), P(\"X\", \"Y\"))", x);

  // all_to_all-style move: rows over Y, columns replicated.
  Array y = reshard(x, P("Y", nullptr));
  show("reshard(x, P(\"Y\", nullptr))", y);

  // Both axes on one dimension, X major.
  Array z = reshard(x, P(Axes{"X", "Y"}));
  show("reshard(x, P(Axes{\"X\", \"Y\"}))", z);

  // all_gather: every device gets the whole array.
  Array r = reshard(x, P());
  std::cout << "\n== reshard(x, P())  ->  " << typeof(r) << "\n" << visualize(r);

  // Unreduced: each device along X holds a partial value; resharding sums them (all_reduce).
  Array u = device_put(ones({2, 2}), P(nullptr, nullptr, Unreduced{{"X"}}));
  std::cout << "\n== unreduced: " << typeof(u) << "\n";
  for (const Shard& s : u.addressable_shards())
    std::cout << "  " << s.device.label() << " holds " << s.data->to_vector<float>()[0] << "\n";
  Array partial = reshard(iota({2, 2}, float32, NamedSharding(mesh, P())),
                          NamedSharding(mesh, P(nullptr, nullptr, Unreduced{{"X"}})));
  Array summed = reshard(partial, P());
  std::cout << "reshard(" << typeof(partial) << " -> P()) = " << typeof(summed) << " values:";
  for (float v : summed.to_vector<float>()) std::cout << " " << v;
  std::cout << "\n";

  // A rank-3 array sharded on two dimensions, drawn by its sharded dims.
  Array h = device_put(zeros({4, 6, 8}), P("X", nullptr, "Y"));
  std::cout << "\n== rank 3\n" << visualize(h);

  // Ops compute their output sharding from the input types (spec §12), eagerly...
  Array a = device_put(arange(32.f).reshape({8, 4}), P("X", "Y"));
  Array w = device_put(ones({4, 2}), P("Y", nullptr));
  Array s = sin(a) * 2.0 + 1.0;
  std::cout << "\n== eager: sin(a) * 2 + 1 : " << typeof(a) << " -> " << typeof(s) << "\n";
  Array m = matmul(a, w, {.out_sharding = P("X", nullptr)});
  std::cout << "matmul(a, w, out_sharding=P('X', None)) : " << typeof(m)
            << " sum = " << sum(m).item<float>() << "\n";

  // ...or traced once by jit into a typed program, partitioned and run on every device.
  auto step = jit([](const Array& a, const Array& w) {
    Array h = matmul(a, w, {.out_sharding = P("X", nullptr)});
    return mean(square(tanh(h)), 1);
  });
  Array loss = step(a, w);
  std::cout << "\n== jit: " << typeof(loss) << " values:";
  for (float v : loss.to_vector<float>()) std::cout << " " << v;
  auto lowered = step.lower(a, w);
  std::cout << "\n-- traced program --\n"
            << lowered.as_text() << "\n-- per-device program --\n"
            << lowered.local;

  // Mistakes are typed errors that say how to fix them.
  try {
    matmul(a, w);  // both contracting dims are sharded on Y: ambiguous
  } catch (const Error& e) {
    std::cout << "\n== error: " << e.what() << "\n";
  }
  try {
    device_put(zeros({6, 4}), P("X"));
  } catch (const Error& e) {
    std::cout << "\n== error: " << e.what() << "\n";
  }
  return 0;
}
