// bitcast_convert_type and Array::view: same, narrower and wider widths on sharded
// operands, and the refusals (a sharded last dim that must be merged; unreduced).
#include "rules/record.h"

using namespace tsr;

namespace rules {

std::vector<Record> bitcast_records() {
  std::vector<Record> r;
  auto add = [&](std::string name, In in, std::function<Array(const Array&)> f,
                 std::vector<std::vector<PartitionSpec>> specs, bool refuses = false) {
    Record rec{{"bitcast_convert_type"}, std::move(name),
               {std::move(in)},          one([f](const std::vector<Array>& a) { return f(a[0]); }),
               std::move(specs),         0.0};
    rec.refuses = refuses;
    r.push_back(std::move(rec));
  };
  const std::vector<std::vector<PartitionSpec>> all = {
      {P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
  const std::vector<std::vector<PartitionSpec>> dim0 = {{P()}, {P("x")}, {P(Axes{"x", "y"})}};
  add(
      "bitcast_f32_i32", {{8, 4}}, [](const Array& x) { return bitcast_convert_type(x, int32); },
      all);
  add(
      "bitcast_f32_u8", {{8, 4}}, [](const Array& x) { return bitcast_convert_type(x, uint8); },
      all);
  add(
      "bitcast_i64_u16", {{8, 4}, int64, Gen::Int},
      [](const Array& x) { return bitcast_convert_type(x, uint16); }, all);
  add(
      "bitcast_u8_f32", {{8, 4}, uint8, Gen::Index},
      [](const Array& x) { return bitcast_convert_type(x, float32); }, dim0);
  add(
      "bitcast_u16x4_u64", {{8, 4}, uint16, Gen::Int},
      [](const Array& x) { return bitcast_convert_type(x, uint64); }, dim0);
  add(
      "view_f32_u16", {{8, 4}}, [](const Array& x) { return x.view(uint16); }, all);
  add("view_u8_f32", {{8, 16}, uint8, Gen::Index}, [](const Array& x) { return x.view(float32); },
      {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}});
  add("view_bool_i16", {{8, 4}, bool_, Gen::Bool}, [](const Array& x) { return x.view(int16); },
      {{P()}, {P("x")}, {P("x", "y")}});
  add(
      "view_i8_bool", {{8, 4}, int8, Gen::Index}, [](const Array& x) { return x.view(bool_); },
      all);
  // The merged last dim is sharded: refused, with a reshard hint.
  add(
      "bitcast_u8_f32_last_sharded", {{8, 4}, uint8, Gen::Index},
      [](const Array& x) { return bitcast_convert_type(x, float32); }, {{P(nullptr, "y")}}, true);
  // Bits of partial sums do not add up to the bits of the sum.
  add(
      "bitcast_unreduced", {{8, 4}},
      [](const Array& x) {
        return bitcast_convert_type(
            sum(reshard(x, P("x")), 0, {.out_sharding = P(Unreduced{{"x"}})}), int32);
      },
      {{P()}, {P("x")}}, true);
  return r;
}

static const RecordSet kSet(bitcast_records);

}  // namespace rules
