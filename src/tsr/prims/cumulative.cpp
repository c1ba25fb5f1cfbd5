// Rules of the cumulative primitives (spec §12.12): the scanned axis must be
// unsharded (E14); the output keeps the operand's sharding, and the kernel scans
// whole lines locally.
#include "tsr/prims/cumulative.h"

#include "tsr/prims/common.h"
#include "tsr/sharding/format.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
const char* const kNames[] = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"};
bool register_all() {
  for (const char* n : kNames) register_primitive(n);
  return true;
}
const bool registered = register_all();
}  // namespace

const char* cum_name(CumKind k) { return kNames[static_cast<int>(k)]; }

std::vector<ArrayType> Cumulative::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (axis_ < 0 || axis_ >= x.ndim())
    throw ValueError(std::string("[") + name() + "] axis " + std::to_string(axis_) +
                     " is out of range. Got " + x.str() + "; expected an axis in [0, " +
                     std::to_string(x.ndim()) + ").");
  bool minmax = kind_ == CumKind::Max || kind_ == CumKind::Min;
  if (x.dtype == DType::Bool && !minmax)
    throw TypeError(std::string("[") + name() + "] " + name() + " does not accept bool. Got " +
                    x.str() + "; expected a numeric array. Convert with astype(int32).");
  if (kind_ == CumKind::LogSumExp && !is_floating(x.dtype))
    throw TypeError(std::string("[cumlogsumexp] cumlogsumexp needs a floating operand. Got ") +
                    x.str() + "; expected a float dtype. Convert with astype(float32).");
  if (!unreduced_of(x).empty()) {
    // Scans commute with combining partial values of their own kind.
    UnreducedKind k = x.sharding.spec().unreduced_kind();
    bool ok = (kind_ == CumKind::Sum && k == UnreducedKind::Sum) ||
              (kind_ == CumKind::Max && k == UnreducedKind::Max) ||
              (kind_ == CumKind::Min && k == UnreducedKind::Min);
    if (!ok)
      throw ShardingTypeError(std::string("[") + name() + "] " + name() +
                              " cannot scan a value that is unreduced of kind " +
                              unreduced_kind_name(k) +
                              ": the partial scans would not combine to the scan. Got " + x.str() +
                              "; expected no unreduced axes (cumsum/cummax/cummin accept their "
                              "own kind). Reduce it first with reshard(x, P(...)).");
  }
  auto e = entries_of(x);
  if (!e[axis_].is_none())
    throw ShardingTypeError(std::string("[") + name() +
                            "] Input should be unsharded over the axis being reduced. Got input "
                            "type=" +
                            x.str() + " and axis=" + std::to_string(axis_) +
                            ". Reshard the input to unsharded on that axis first.");
  return {make_type(x.shape, x.dtype, x.weak, rule_mesh(in), e, x.sharding.spec())};
}

Lowering Cumulative::partition(const std::vector<ArrayType>& in,
                               const std::vector<ArrayType>& out) const {
  return {{in[0].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string Cumulative::params() const {
  return "axis=" + std::to_string(axis_) + " reverse=" + (reverse_ ? "True" : "False");
}

}  // namespace tsr::prim
