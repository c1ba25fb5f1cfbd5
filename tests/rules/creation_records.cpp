#include "rules/record.h"

using namespace tsr;

namespace rules {

std::vector<Record> creation_records() {
  std::vector<Record> r;
  auto add = [&](std::vector<std::string> prims, std::string name,
                 std::function<Array(const std::vector<Array>&)> f) {
    // The input only carries the mesh; its spec decides the requested out_sharding.
    r.push_back({std::move(prims),
                 std::move(name),
                 {{{8, 4}}},
                 one(std::move(f)),
                 {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}}});
  };
  add({"full"}, "zeros_like", [](auto& a) { return zeros_like(a[0]) + a[0]; });
  add({"full"}, "full", [](auto& a) {
    return full({8, 4}, 2.5, float32, typeof(a[0]).sharding) * a[0];
  });
  add({"iota"}, "iota", [](auto& a) {
    return iota({8, 4}, float32, typeof(a[0]).sharding) + a[0];
  });
  add({"iota"}, "arange", [](auto& a) { return arange(2, 34, 1, float32).reshape({8, 4}) + a[0]; });
  add({"iota", "eq"}, "eye",
      [](auto& a) { return eye(8, 4, 1, float32, typeof(a[0]).sharding) - a[0]; });
  add({"iota"}, "linspace", [](auto& a) { return linspace(0, 1, 32).reshape({8, 4}) + a[0]; });
  add({"iota"}, "broadcasted_iota", [](auto& a) {
    return broadcasted_iota(float32, {8, 4}, 1, typeof(a[0]).sharding) * a[0];
  });
  add({"jit"}, "nested_jit", [](auto& a) {
    auto inner = jit([](const Array& x) { return sin(x) * 2.0; });
    return inner(a[0]) + 1.0;
  });
  return r;
}

static const RecordSet kSet(creation_records);

}  // namespace rules
