// Scenario S4 (SCENARIOS.md): pmap maps a function over the leading axis of its input,
// one slice per device, and names that device axis so collectives can refer to it.
// Then the same computation as a shard_map over a 2-D (data, model) mesh built to fit
// the device count. Every result is checked against the plain one-device computation.
//
//   pmap(f) is shard_map on a 1-D mesh: row k is computed on device k.
#include <cmath>
#include <iostream>

#include "tsr/tsr.h"

using namespace tsr;

namespace {

bool same(const Array& a, const Array& b) {
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  if (a.shape() != b.shape()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x[i] - y[i]) > 1e-5f) return false;
  return true;
}

// Each device's piece of y, with the device it lives on.
void show_shards(const char* title, const Array& y) {
  std::cout << title << ": " << typeof(y) << "\n";
  for (const Shard& s : y.addressable_shards()) {
    std::cout << "  device " << s.device.id << " holds " << typeof(*s.data) << ":";
    for (float v : s.data->to_vector<float>()) std::cout << " " << v;
    std::cout << "\n";
  }
}

}  // namespace

int main() {
  tsr::init({.num_cpu_devices = 8});
  Array data = reshape(arange(0.0, 20.0), {4, 5}).astype(float32);
  const Array one_device_sum = broadcast_to(sum(data, 0), {4, 5});
  bool ok = true;

  // 1. y = jax.pmap(lambda x: x * 2, axis_name='data_parallel_axis', in_axes=0)(data)
  auto doubled = pmap([](const Array& x) { return x * 2.0; },  // x: f32[5], one row
                      {.axis_name = "data_parallel_axis", .in_axes = 0});
  Array y = doubled(data);
  show_shards("pmap(x * 2)", y);
  ok &= same(y, data * 2.0);

  // 2. Collectives name the device axis: psum and pmean over the four devices.
  auto reduce = pmap(
      [](const Array& x) {
        return std::make_pair(psum(x, "data_parallel_axis"), pmean(x, "data_parallel_axis"));
      },
      {.axis_name = "data_parallel_axis"});
  auto [s, m] = reduce(data);
  show_shards("pmap(psum(x))", s);
  std::cout << "pmean, device 0's row:";
  for (float v : m.addressable_shards()[0].data->to_vector<float>()) std::cout << " " << v;
  std::cout << "\n";
  ok &= same(s, one_device_sum) && same(m, one_device_sum / 4.0);

  // 3. The same as shard_map on a 2-D mesh: rows over `data` (4), the rest of the
  //    devices on `model`, which the weights' columns are split over.
  int model = device_count() / 4;
  Mesh mesh = make_mesh({4, model}, {"data", "model"});
  std::cout << "mesh " << mesh << ", devices [";
  for (int r = 0; r < 4; ++r) {  // row-major: [[d0, d1], [d2, d3], ...]
    std::cout << (r ? ", [" : "[");
    for (int c = 0; c < model; ++c)
      std::cout << (c ? ", " : "") << mesh.devices()[r * model + c].id;
    std::cout << "]";
  }
  std::cout << "]\n";
  Array w = reshape(arange(0.0, 5.0 * 2 * model), {5, 2 * model}).astype(float32) * 0.1;
  auto step = shard_map(
      [](const Array& x, const Array& wb) {  // x: f32[1,5]{V:data}, wb: f32[5,2]{V:model}
        Array x2 = x * 2.0;
        return std::make_tuple(x2, psum(x, "data"), pmean(x, "data"), matmul(x2, wb));
      },
      {.mesh = mesh,
       .in_specs = {P("data"), P(nullptr, "model")},
       .out_specs = {P("data"), P(), P(), P("data", "model")}});
  auto [y2, s2, m2, h] = step(data, w);
  std::cout << "shard_map: x * 2 " << typeof(y2) << ", psum " << typeof(s2) << ", (x * 2) @ w "
            << typeof(h) << "\n";
  ok &= same(y2, data * 2.0) && same(s2, sum(data, 0, {.keepdims = true})) &&
        same(m2, mean(data, 0, {.keepdims = true})) && same(h, matmul(data * 2.0, w));

  std::cout << (ok ? "all equal to the one-device computation\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
