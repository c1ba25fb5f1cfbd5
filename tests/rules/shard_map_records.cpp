// Records for shard_map and the collectives of its body: on every driver mesh and
// input layout, the body's blocks are the input's shards (in_specs read from the
// argument's type), and the collectives reduce over every mesh axis. The Grads test
// differentiates them (shard_map's jvp and transpose, psum <-> pvary).
#include "rules/record.h"
#include "tsr/shard_map.h"

using namespace tsr;

namespace rules {
namespace {

std::vector<std::vector<PartitionSpec>> specs() {
  return {{P()}, {P("x")}, {P("x", "y")}, {P(nullptr, "y")}, {P(Axes{"x", "y"})}};
}

AxisNames all_axes() { return AxisNames(get_mesh().axis_names()); }

// f applied per block, the result laid out as the input (or replicated).
Record rec(std::vector<std::string> prims, std::string name,
           std::function<Array(const Array&)> body, bool replicated_out, double rtol = 1e-5) {
  Record r{std::move(prims),
           std::move(name),
           {{{8, 4}}},
           one([body, replicated_out](const std::vector<Array>& a) {
             PartitionSpec out = replicated_out ? P() : typeof(a[0]).sharding.spec();
             return shard_map(body, {.out_specs = out})(a[0]);
           }),
           specs(),
           rtol};
  return r;
}

// pmax / pmin have no derivative (JAX raises NotImplementedError; shard_map_ad_test
// checks the text).
Record no_grad(Record r) {
  r.grad = Record::Grad::Skip;
  r.grad_why = "JAX has no differentiation rule for pmax / pmin";
  return r;
}

}  // namespace

std::vector<Record> shard_map_records() {
  std::vector<Record> r;
  // A block-local body: any layout, the same values as the function on one device.
  r.push_back(rec(
      {"shard_map"}, "shard_map_elementwise", [](const Array& b) { return tanh(b) * 2.0 + 1.0; },
      false));
  // psum over every axis of the block's sum, divided by the number of copies of each
  // block (the axes the block does not vary over): the sum of the whole array.
  r.push_back(rec(
      {"shard_map", "psum"}, "shard_map_psum_of_sums",
      [](const Array& b) {
        double copies = 1;
        for (const auto& a : get_mesh().axis_names())
          if (!typeof(b).vma.count(a)) copies *= static_cast<double>(axis_size(a));
        return psum(sum(b) / copies, all_axes());
      },
      true));
  r.push_back(no_grad(rec(
      {"shard_map", "pmax"}, "shard_map_pmax_of_maxes",
      [](const Array& b) { return pmax(max(b), all_axes()); }, true)));
  r.push_back(no_grad(rec(
      {"shard_map", "pmin"}, "shard_map_pmin_of_mins",
      [](const Array& b) { return pmin(min(b), all_axes()); }, true)));
  // A block plus the psum of 0 * each device's index (invariant, so the add pvaries
  // it back to the block's axes): the values do not depend on the layout.
  r.push_back(rec(
      {"shard_map", "axis_index", "psum", "pvary"}, "shard_map_axis_index",
      [](const Array& b) {
        return b + psum(astype(axis_index(all_axes()), float32) * 0.0, all_axes());
      },
      false));
  return r;
}

static const RecordSet kSet(shard_map_records);

}  // namespace rules
