// Rules of the shape primitives (spec §12.6–§12.9).
#include "tsr/prims/shape_ops.h"

#include <algorithm>
#include <set>

#include "tsr/indexing.h"
#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/reshape_rule.h"
#include "tsr/prims/sharding_ops.h"
#include "tsr/sharding/format.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {

bool register_all() {
  for (const char* n :
       {"reshape", "transpose", "squeeze", "broadcast_in_dim", "slice", "dynamic_slice",
        "dynamic_update_slice", "pad", "concatenate", "split", "rev"}) {
    register_primitive(n);
    declare_ad(n, AdKind::Linear);
  }
  return true;
}
const bool registered = register_all();

std::string ints(const std::vector<int>& v) { return ints_tuple(v); }

void check_scalar_index(const ArrayType& t, const char* op) {
  if (t.ndim() != 0 || !is_integer(t.dtype))
    throw TypeError(std::string("[") + op + "] start indices must be integer scalars. Got " +
                    t.str() + "; expected an int32 or int64 array of shape ().");
  no_unreduced(op, {t});  // a partial index would pick a different slice per device
}

}  // namespace

// ---- reshape -------------------------------------------------------------------

std::vector<ArrayType> Reshape::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  for (int64_t n : sizes_)
    if (n < 0)
      throw TypeError("[reshape] new sizes must be non-negative. Got " + shape_str(sizes_) +
                      "; expected sizes >= 0 (use -1 only in tsr::reshape, which resolves it).");
  if (numel(sizes_) != numel(x.shape))
    throw TypeError("[reshape] reshape total size must be unchanged, got new_sizes " +
                    shape_str(sizes_) + " (size " + std::to_string(numel(sizes_)) + ") for shape " +
                    shape_str(x.shape) + " (size " + std::to_string(numel(x.shape)) +
                    "). Pick sizes with the same product.");
  if (out_sharding_) {
    check_unreduced_move(x, *out_sharding_, "reshape");  // partition reshards to it
    return {make_type(sizes_, x.dtype, x.weak, *out_sharding_)};
  }
  ReshapePlan p = plan_reshape(x, sizes_);
  if (!p.ok)
    throw ShardingTypeError(
        "[reshape] This reshape is not supported. Please specify the sharding of the output via "
        "the `out_sharding` argument of tsr::reshape. Got operand type: " +
        x.str() + ", new sizes: " + ints_tuple(sizes_));
  return {make_type(sizes_, x.dtype, x.weak, rule_mesh(in), p.out, x.sharding.spec())};
}

Lowering Reshape::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  const ArrayType& x = in[0];
  ReshapePlan p = plan_reshape(x, sizes_);
  Lowering l;
  if (!p.ok) {
    // No local form: gather, reshape, and let the lowering cut the result.
    p.in_local.assign(static_cast<size_t>(x.ndim()), PartitionEntry());
    p.out_local.assign(sizes_.size(), PartitionEntry());
  }
  l.in.push_back(with_sets_of(p.in_local, x.sharding.spec()));
  l.out.push_back(with_sets_of(p.out_local, x.sharding.spec()));
  return l;
}

std::string Reshape::params() const {
  return "new_sizes=" + ints_tuple(sizes_) + " out_sharding=" + p_sharding(out_sharding_);
}

// ---- transpose -----------------------------------------------------------------

std::vector<ArrayType> Transpose::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  std::vector<int> sorted = perm_;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(perm_.size()) == x.ndim();
  for (int i = 0; ok && i < x.ndim(); ++i) ok = sorted[i] == i;
  if (!ok)
    throw TypeError(
        "[transpose] transpose permutation isn't a permutation of operand dimensions, "
        "got permutation " +
        ints(perm_) + " for operand shape " + shape_str(x.shape) + ". Pass each axis in [0, " +
        std::to_string(x.ndim()) + ") once.");
  auto e = entries_of(x);
  Shape shape;
  std::vector<PartitionEntry> oe;
  for (int p : perm_) shape.push_back(x.shape[p]), oe.push_back(e[p]);
  return {make_type(shape, x.dtype, x.weak, rule_mesh(in), oe, x.sharding.spec())};
}

Lowering Transpose::partition(const std::vector<ArrayType>& in,
                              const std::vector<ArrayType>& out) const {
  return {{in[0].sharding.spec()}, {out[0].sharding.spec()}};
}

std::string Transpose::params() const { return "permutation=" + ints(perm_); }

// ---- squeeze -------------------------------------------------------------------

std::vector<ArrayType> Squeeze::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  for (int d : dims_)
    if (d < 0 || d >= x.ndim() || x.shape[d] != 1)
      throw TypeError(
          "[squeeze] cannot select an axis to squeeze out which has size not equal to "
          "one, got shape=" +
          shape_str(x.shape) + " and dimensions=" + ints(dims_) + ". Squeeze only size-1 dims.");
  auto e = entries_of(x);
  Shape shape;
  std::vector<PartitionEntry> oe;
  for (int d = 0; d < x.ndim(); ++d)
    if (std::find(dims_.begin(), dims_.end(), d) == dims_.end())
      shape.push_back(x.shape[d]), oe.push_back(e[d]);
  return {make_type(shape, x.dtype, x.weak, rule_mesh(in), oe, x.sharding.spec())};
}

Lowering Squeeze::partition(const std::vector<ArrayType>& in,
                            const std::vector<ArrayType>& out) const {
  auto e = entries_of(in[0]);
  for (int d : dims_) e[d] = PartitionEntry();  // size 1: only size-1 axes could be there
  std::vector<PartitionEntry> oe;
  for (int d = 0; d < in[0].ndim(); ++d)
    if (std::find(dims_.begin(), dims_.end(), d) == dims_.end()) oe.push_back(e[d]);
  return {{with_sets_of(e, in[0].sharding.spec())}, {with_sets_of(oe, in[0].sharding.spec())}};
}

std::string Squeeze::params() const { return "dimensions=" + ints(dims_); }

// ---- broadcast_in_dim ------------------------------------------------------------

std::vector<ArrayType> BroadcastInDim::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  bool ok = static_cast<int>(bdims_.size()) == x.ndim();
  for (size_t i = 0; ok && i < bdims_.size(); ++i) {
    int d = bdims_[i];
    ok = d >= 0 && d < static_cast<int>(shape_.size()) && (i == 0 || d > bdims_[i - 1]) &&
         (x.shape[i] == 1 || x.shape[i] == shape_[d]);
  }
  if (!ok)
    throw TypeError("[broadcast_in_dim] broadcast_in_dim operand shape " + shape_str(x.shape) +
                    " does not fit shape " + shape_str(shape_) + " with broadcast_dimensions " +
                    ints(bdims_) +
                    ". Got those; expected increasing dims whose operand sizes "
                    "are 1 or equal to the target's.");
  if (out_sharding_) {
    check_unreduced_move(x, *out_sharding_, "broadcast_in_dim");
    return {make_type(shape_, x.dtype, x.weak, *out_sharding_)};
  }
  auto e = entries_of(x);
  std::vector<PartitionEntry> oe(shape_.size());
  for (size_t i = 0; i < bdims_.size(); ++i)
    if (x.shape[i] == shape_[bdims_[i]]) oe[bdims_[i]] = e[i];
  return {make_type(shape_, x.dtype, x.weak, rule_mesh(in), oe, x.sharding.spec())};
}

Lowering BroadcastInDim::partition(const std::vector<ArrayType>& in,
                                   const std::vector<ArrayType>& out) const {
  const ArrayType& x = in[0];
  auto e = entries_of(x);
  std::vector<PartitionEntry> oe(shape_.size());
  for (size_t i = 0; i < bdims_.size(); ++i) {
    if (x.shape[i] == shape_[bdims_[i]])
      oe[bdims_[i]] = e[i];
    else
      e[i] = PartitionEntry();
  }
  return {{with_sets_of(e, x.sharding.spec())}, {with_sets_of(oe, x.sharding.spec())}};
}

std::string BroadcastInDim::params() const {
  return "shape=" + ints_tuple(shape_) + " broadcast_dimensions=" + ints(bdims_) +
         " out_sharding=" + p_sharding(out_sharding_);
}

// ---- slice -----------------------------------------------------------------------

std::vector<ArrayType> Slice::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  int r = x.ndim();
  if (static_cast<int>(start_.size()) != r || static_cast<int>(limit_.size()) != r ||
      static_cast<int>(strides_.size()) != r)
    throw TypeError("[slice] slice start_indices, limit_indices and strides must have length " +
                    std::to_string(r) + ". Got " + ints_tuple(start_) + ", " + ints_tuple(limit_) +
                    ", " + ints_tuple(strides_) + " for " + x.str() + "; expected one per dim.");
  Shape out;
  for (int d = 0; d < r; ++d) {
    if (start_[d] < 0 || start_[d] > limit_[d] || limit_[d] > x.shape[d] || strides_[d] < 1)
      throw TypeError("[slice] slice bounds are out of range in dim " + std::to_string(d) +
                      ". Got start=" + ints_tuple(start_) + " limit=" + ints_tuple(limit_) +
                      " strides=" + ints_tuple(strides_) + " for shape " + shape_str(x.shape) +
                      "; expected 0 <= start <= limit <= size and strides >= 1.");
    out.push_back((limit_[d] - start_[d] + strides_[d] - 1) / strides_[d]);
  }
  return {varying_out(out, x, "slicing", "slice")};
}

Lowering Slice::partition(const std::vector<ArrayType>& in,
                          const std::vector<ArrayType>& out) const {
  std::vector<bool> ch;
  for (int d = 0; d < in[0].ndim(); ++d)
    ch.push_back(!(start_[d] == 0 && strides_[d] == 1 && limit_[d] == in[0].shape[d]));
  PartitionSpec s = unshard_dims(in[0], ch);
  return {{s}, {s}};
}

std::string Slice::params() const {
  return "start_indices=" + ints_tuple(start_) + " limit_indices=" + ints_tuple(limit_) +
         " strides=" + ints_tuple(strides_);
}

// ---- dynamic_slice / dynamic_update_slice --------------------------------------------

std::vector<ArrayType> DynamicSlice::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (static_cast<int>(in.size()) != x.ndim() + 1 || static_cast<int>(sizes_.size()) != x.ndim())
    throw TypeError(
        "[dynamic_slice] dynamic_slice needs one start index and one size per "
        "dimension. Got " +
        std::to_string(in.size() - 1) + " indices and sizes " + ints_tuple(sizes_) + " for " +
        x.str() + "; expected " + std::to_string(x.ndim()) + " of each.");
  for (size_t i = 1; i < in.size(); ++i) check_scalar_index(in[i], "dynamic_slice");
  for (int d = 0; d < x.ndim(); ++d)
    if (sizes_[d] < 0 || sizes_[d] > x.shape[d])
      throw TypeError("[dynamic_slice] slice sizes must be within the operand. Got sizes " +
                      ints_tuple(sizes_) + " for shape " + shape_str(x.shape) +
                      "; expected 0 <= size <= dim.");
  return {varying_out(sizes_, x, "dynamic_slice", "dynamic_slice")};
}

Lowering DynamicSlice::partition(const std::vector<ArrayType>& in,
                                 const std::vector<ArrayType>& out) const {
  std::vector<bool> ch;
  for (int d = 0; d < in[0].ndim(); ++d) ch.push_back(sizes_[d] != in[0].shape[d]);
  PartitionSpec s = unshard_dims(in[0], ch);
  Lowering l{{s}, {s}};
  for (size_t i = 1; i < in.size(); ++i) l.in.push_back(PartitionSpec());
  return l;
}

std::string DynamicSlice::params() const { return "slice_sizes=" + ints_tuple(sizes_); }

std::vector<ArrayType> DynamicUpdateSlice::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &x = in.at(0), &u = in.at(1);
  if (u.ndim() != x.ndim() || static_cast<int>(in.size()) != x.ndim() + 2)
    throw TypeError(
        "[dynamic_update_slice] update and start indices must match the operand's "
        "rank. Got operand " +
        x.str() + ", update " + u.str() + " and " + std::to_string(in.size() - 2) +
        " indices; expected rank " + std::to_string(x.ndim()) + " and one index per dim.");
  if (u.dtype != x.dtype)
    throw TypeError(std::string("[dynamic_update_slice] update dtype ") + dtype_name(u.dtype) +
                    " differs from operand dtype " + dtype_name(x.dtype) +
                    ". Convert the update with astype.");
  for (int d = 0; d < x.ndim(); ++d)
    if (u.shape[d] > x.shape[d])
      throw TypeError("[dynamic_update_slice] update shape " + shape_str(u.shape) +
                      " must fit within operand shape " + shape_str(x.shape) +
                      ". Got a larger update; expected each dim <= the operand's.");
  for (size_t i = 2; i < in.size(); ++i) check_scalar_index(in[i], "dynamic_update_slice");
  if (!x.sharding.mesh().empty() && !u.sharding.mesh().empty() &&
      !(x.sharding.spec() == u.sharding.spec() && x.sharding.mesh() == u.sharding.mesh()))
    throw ShardingTypeError(
        "[dynamic_update_slice] dynamic_update_slice operand sharding must be equal to update "
        "sharding, got operand sharding " +
        x.sharding.str() + " and update sharding " + u.sharding.str() +
        ". Reshard the update to the operand's sharding.");
  return {x};
}

Lowering DynamicUpdateSlice::partition(const std::vector<ArrayType>& in,
                                       const std::vector<ArrayType>& out) const {
  std::vector<bool> ch;
  for (int d = 0; d < in[0].ndim(); ++d) ch.push_back(in[1].shape[d] != in[0].shape[d]);
  PartitionSpec s = unshard_dims(in[0], ch);
  Lowering l{{s, unshard_dims(in[1], ch)}, {s}};
  for (size_t i = 2; i < in.size(); ++i) l.in.push_back(PartitionSpec());
  return l;
}

// ---- pad -------------------------------------------------------------------------

std::vector<ArrayType> Pad::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &x = in.at(0), &v = in.at(1);
  if (v.ndim() != 0 || v.dtype != x.dtype)
    throw TypeError("[pad] the padding value must be a scalar of the operand's dtype. Got " +
                    v.str() + " for " + x.str() + "; expected " + dtype_short_name(x.dtype) +
                    "[].");
  int r = x.ndim();
  if (static_cast<int>(lo_.size()) != r || static_cast<int>(hi_.size()) != r ||
      static_cast<int>(interior_.size()) != r)
    throw TypeError("[pad] padding_config must have one (lo, hi, interior) per dimension. Got " +
                    std::to_string(lo_.size()) + " for " + x.str() + "; expected " +
                    std::to_string(r) + ".");
  Shape out;
  for (int d = 0; d < r; ++d) {
    if (interior_[d] < 0)
      throw TypeError("[pad] interior padding must be non-negative. Got " + ints_tuple(interior_) +
                      "; expected values >= 0.");
    int64_t n = x.shape[d];
    int64_t o = lo_[d] + hi_[d] + n + std::max<int64_t>(n - 1, 0) * interior_[d];
    if (o < 0)
      throw TypeError("[pad] padding gives a negative dimension size " + std::to_string(o) +
                      " in dim " + std::to_string(d) + ". Got lo=" + ints_tuple(lo_) +
                      " hi=" + ints_tuple(hi_) + " for shape " + shape_str(x.shape) +
                      "; expected sizes >= 0.");
    out.push_back(o);
  }
  // Pad is linear in (operand, value) jointly: an unreduced operand needs the value
  // combined the same way (a replicated value is laid out so that it counts once).
  if (!unreduced_of(v).empty() &&
      !(v.sharding.spec().unreduced() == unreduced_of(x) &&
        v.sharding.spec().unreduced_kind() == x.sharding.spec().unreduced_kind()))
    throw ShardingTypeError(
        "[pad] the padding value is unreduced differently from the operand. "
        "Got operand " +
        x.str() + " and padding value " + v.str() +
        "; expected the same unreduced axes and kind, or none on the value. "
        "Reshard the value first.");
  return {varying_out(out, x, "padding", "pad")};
}

Lowering Pad::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  std::vector<bool> ch;
  for (int d = 0; d < in[0].ndim(); ++d)
    ch.push_back(lo_[d] != 0 || hi_[d] != 0 || interior_[d] != 0);
  PartitionSpec s = unshard_dims(in[0], ch);
  // The value takes the operand's sets: for a sum it sits on one device, zeros elsewhere.
  return {{s, with_sets_of({}, in[0].sharding.spec())}, {s}};
}

std::string Pad::params() const {
  std::string s = "padding_config=(";
  for (size_t d = 0; d < lo_.size(); ++d)
    s += (d ? ", (" : "(") + std::to_string(lo_[d]) + ", " + std::to_string(hi_[d]) + ", " +
         std::to_string(interior_[d]) + ")";
  return s + (lo_.size() == 1 ? ",)" : ")");
}

// ---- concatenate ----------------------------------------------------------------

std::vector<ArrayType> Concatenate::infer(const std::vector<ArrayType>& in) const {
  if (in.empty())
    throw TypeError(
        "[concatenate] concatenate needs at least one operand. Got none; expected 1 or more.");
  const ArrayType& x = in[0];
  if (dim_ < 0 || dim_ >= x.ndim())
    throw TypeError("[concatenate] concatenate dimension out of bounds: dimension " +
                    std::to_string(dim_) + " for shape " + shape_str(x.shape) +
                    ". Got that; expected a dim in [0, rank).");
  Shape shape = x.shape;
  shape[dim_] = 0;
  for (const auto& t : in) {
    bool ok = t.ndim() == x.ndim() && t.dtype == x.dtype;
    for (int d = 0; ok && d < x.ndim(); ++d) ok = d == dim_ || t.shape[d] == x.shape[d];
    if (!ok)
      throw TypeError(
          "[concatenate] Cannot concatenate arrays with different dtypes or shapes "
          "other than along dimension " +
          std::to_string(dim_) + ". Got " + t.str() + " and " + x.str() +
          "; expected matching shapes and dtypes.");
    shape[dim_] += t.shape[dim_];
  }
  const NamedSharding* s = nullptr;
  for (const auto& t : in) {
    if (t.sharding.mesh().empty()) continue;
    if (s && !(t.sharding == *s)) {
      std::string list;
      bool first = true;
      for (const auto& u : in) {
        if (u.sharding.mesh().empty()) continue;
        list += (first ? "" : ", ") + u.sharding.spec().repr();
        first = false;
      }
      throw ShardingTypeError(
          "[concatenate] All operands should have the same sharding. Got "
          "shardings " +
          list + ". Reshard them to one sharding first.");
    }
    if (!s) s = &t.sharding;
  }
  bool weak = true;
  for (const auto& t : in) weak = weak && t.weak;
  if (!s) return {make_type(shape, x.dtype, weak, rule_mesh(in), PartitionSpec())};
  return {make_type(shape, x.dtype, weak, *s)};
}

Lowering Concatenate::partition(const std::vector<ArrayType>& in,
                                const std::vector<ArrayType>& out) const {
  std::vector<bool> ch(static_cast<size_t>(out[0].ndim()), false);
  ch[dim_] = true;
  PartitionSpec s = unshard_dims(out[0], ch);
  Lowering l;
  for (size_t i = 0; i < in.size(); ++i) l.in.push_back(s);
  l.out.push_back(s);
  return l;
}

std::string Concatenate::params() const { return "dimension=" + std::to_string(dim_); }

// ---- split ---------------------------------------------------------------------------

std::vector<ArrayType> Split::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  if (axis_ < 0 || axis_ >= x.ndim())
    throw TypeError("[split] split axis out of bounds. Got axis " + std::to_string(axis_) +
                    " for " + x.str() + "; expected an axis in [0, rank).");
  int64_t total = 0;
  for (int64_t s : sizes_) total += s;
  if (total != x.shape[axis_])
    throw TypeError("[split] Sum of sizes " + ints_tuple(sizes_) + " must equal the size of axis " +
                    std::to_string(axis_) + " (" + std::to_string(x.shape[axis_]) +
                    "). Got total " + std::to_string(total) + ". Fix the sizes.");
  std::vector<ArrayType> outs;
  for (int64_t s : sizes_) {
    Shape shape = x.shape;
    shape[axis_] = s;
    outs.push_back(varying_out(shape, x, "split", "split"));
  }
  return outs;
}

Lowering Split::partition(const std::vector<ArrayType>& in,
                          const std::vector<ArrayType>& out) const {
  std::vector<bool> ch(static_cast<size_t>(in[0].ndim()), false);
  ch[axis_] = sizes_.size() > 1;
  PartitionSpec s = unshard_dims(in[0], ch);
  Lowering l{{s}, {}};
  for (size_t i = 0; i < out.size(); ++i) l.out.push_back(s);
  return l;
}

std::string Split::params() const {
  return "sizes=" + ints_tuple(sizes_) + " axis=" + std::to_string(axis_);
}

// ---- rev -----------------------------------------------------------------------------

std::vector<ArrayType> Rev::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  std::set<int> seen;
  for (int d : dims_)
    if (d < 0 || d >= x.ndim() || !seen.insert(d).second)
      throw TypeError("[rev] rev dimensions must be unique and in range. Got " + ints(dims_) +
                      " for " + x.str() + "; expected distinct dims in [0, rank).");
  return {x};  // a permutation: linear, so unreduced values stay unreduced
}

Lowering Rev::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  std::vector<bool> ch(static_cast<size_t>(in[0].ndim()), false);
  for (int d : dims_) ch[d] = true;
  PartitionSpec s = unshard_dims(in[0], ch);
  return {{s}, {s}};
}

std::string Rev::params() const { return "dimensions=" + ints(dims_); }

// ---- autodiff rules ----------------------------------------------------------------
// Every shape primitive is linear in its array operands; index operands (dynamic
// slices) have no tangents. Transposes produce the operand's cotangent type, asking
// the rule for it through out_sharding where the primitive takes one.

namespace {

// out_sharding for a cotangent of type t (none off-mesh).
std::optional<NamedSharding> os_of(const ArrayType& t) {
  if (t.sharding.mesh().empty()) return std::nullopt;
  return NamedSharding(t.sharding.mesh(), t.sharding.normalized(t.ndim()).spec());
}

Array reshape_to(const Array& ct, const ArrayType& x) {
  ArrayType want = ct_type(x);
  try {
    return bind1(std::make_shared<Reshape>(x.shape, os_of(want)), {ct});
  } catch (const Error&) {
    return ad::or_replicated(
        [&](const Array& c) {
          return bind1(std::make_shared<Reshape>(x.shape, std::nullopt), {c});
        },
        ct);
  }
}

Array zero_scalar(const Array& like) {
  ArrayType t = like.type();
  t.shape = {};
  t.sharding = t.sharding.with_spec(PartitionSpec({}, {}, t.sharding.spec().reduced()));
  return zeros_of(t, like);
}

// dynamic_update_slice of `update` into zeros shaped like x.
Array dus_into_zeros(const ArrayType& x, const Array& update, const std::vector<Array>& idx) {
  return ad::or_replicated(
      [&](const Array& u) {
        ArrayType zt = x;
        zt.dtype = u.dtype();
        zt.weak = u.type().weak;
        zt.sharding = u.type().sharding;
        std::vector<Array> in = {zeros_of(zt, u), u};
        in.insert(in.end(), idx.begin(), idx.end());
        return bind1(std::make_shared<DynamicUpdateSlice>(), in);
      },
      update);
}

}  // namespace

std::vector<Array> Reshape::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Reshape::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>& ins) const {
  return {reshape_to(cts[0], ins[0].type)};
}

std::vector<Array> Transpose::jvp(const std::vector<Array>& primals,
                                  const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Transpose::transpose(const std::vector<Array>& cts,
                                        const std::vector<LinearIn>&) const {
  std::vector<int> inv(perm_.size());
  for (size_t i = 0; i < perm_.size(); ++i)
    inv[static_cast<size_t>(perm_[i])] = static_cast<int>(i);
  return {bind1(std::make_shared<Transpose>(inv), {cts[0]})};
}

std::vector<Array> Squeeze::jvp(const std::vector<Array>& primals,
                                const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Squeeze::transpose(const std::vector<Array>& cts,
                                      const std::vector<LinearIn>& ins) const {
  return {reshape_to(cts[0], ins[0].type)};
}

std::vector<Array> BroadcastInDim::jvp(const std::vector<Array>& primals,
                                       const std::vector<Array>& tangents,
                                       std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> BroadcastInDim::transpose(const std::vector<Array>& cts,
                                             const std::vector<LinearIn>& ins) const {
  // Sum the new dims and the size-1 dims that were expanded, then restore the 1s.
  const ArrayType& x = ins[0].type;
  std::vector<int> axes;
  for (int d = 0; d < static_cast<int>(shape_.size()); ++d) {
    auto it = std::find(bdims_.begin(), bdims_.end(), d);
    if (it == bdims_.end() || (x.shape[it - bdims_.begin()] == 1 && shape_[d] != 1))
      axes.push_back(d);
  }
  ArrayType want = ct_type(x);
  want.dtype = cts[0].dtype();
  return {ad::sum_to(cts[0], axes, want)};
}

std::vector<Array> Slice::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                              std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Slice::transpose(const std::vector<Array>& cts,
                                    const std::vector<LinearIn>& ins) const {
  // lax's _slice_transpose_rule: pad the cotangent back with zeros.
  const Array& ct = cts[0];
  const Shape& xs = ins[0].type.shape;
  Shape lo = start_, hi(xs.size()), interior(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    int64_t n = ct.shape()[d];
    int64_t real_limit = start_[d] + (n == 0 ? 0 : 1 + (n - 1) * strides_[d]);
    hi[d] = xs[d] - real_limit;
    interior[d] = n == 0 ? 0 : strides_[d] - 1;
  }
  return {ad::or_replicated(
      [&](const Array& c) {
        return bind1(std::make_shared<Pad>(lo, hi, interior), {c, zero_scalar(c)});
      },
      ct)};
}

std::vector<Array> Pad::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                            std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Pad::transpose(const std::vector<Array>& cts,
                                  const std::vector<LinearIn>& ins) const {
  // lax's _pad_transpose: undo the edge padding, then stride over the interior.
  const Array& ct = cts[0];
  Shape nlo, nhi, zero(lo_.size(), 0), step(lo_.size());
  for (size_t d = 0; d < lo_.size(); ++d) {
    nlo.push_back(-lo_[d]);
    nhi.push_back(-hi_[d]);
    step[d] = interior_[d] + 1;
  }
  Array t_op = ad::or_replicated(
      [&](const Array& c) {
        Array unpadded = bind1(std::make_shared<Pad>(nlo, nhi, zero), {c, zero_scalar(c)});
        return bind1(std::make_shared<Slice>(zero, unpadded.shape(), step), {unpadded});
      },
      ct);
  Array t_pad;
  if (ins[1].linear()) t_pad = sum(ct) - sum(t_op);
  return {ins[0].linear() ? t_op : Array(), t_pad};
}

std::vector<Array> Concatenate::jvp(const std::vector<Array>& primals,
                                    const std::vector<Array>& tangents, std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Concatenate::transpose(const std::vector<Array>& cts,
                                          const std::vector<LinearIn>& ins) const {
  Shape sizes;
  for (const auto& in : ins) sizes.push_back(in.type.shape[dim_]);
  std::vector<Array> parts = detail::bind(std::make_shared<Split>(sizes, dim_), {cts[0]});
  std::vector<Array> out(ins.size());
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].linear()) out[i] = parts[i];
  return out;
}

std::vector<Array> Split::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                              std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Split::transpose(const std::vector<Array>& cts,
                                    const std::vector<LinearIn>& ins) const {
  // The pieces' cotangents share one sharding (split's rule keeps the operand's);
  // a missing one is zeros of that sharding, or replicated when it does not divide.
  Array like = ad::first_valid(cts);
  std::vector<Array> pieces;
  for (size_t i = 0; i < cts.size(); ++i) {
    Shape s = ins[0].type.shape;
    s[axis_] = sizes_[i];
    pieces.push_back(cts[i].valid() ? cts[i] : ad::zeros_shaped(s, like));
  }
  try {
    return {bind1(std::make_shared<Concatenate>(axis_), pieces)};
  } catch (const ShardingTypeError&) {
    const ArrayType& t = like.type();
    NamedSharding rep = t.sharding.with_spec(PartitionSpec({}, t.sharding.spec().unreduced(),
                                                           t.sharding.spec().reduced(),
                                                           t.sharding.spec().unreduced_kind()));
    for (auto& p : pieces)
      p = bind1(std::make_shared<Reshard>(rep.normalized(p.ndim()), std::nullopt), {p});
    return {bind1(std::make_shared<Concatenate>(axis_), pieces)};
  }
}

std::vector<Array> Rev::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                            std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}
std::vector<Array> Rev::transpose(const std::vector<Array>& cts,
                                  const std::vector<LinearIn>&) const {
  return {bind1(std::make_shared<Rev>(dims_), {cts[0]})};
}

std::vector<Array> DynamicSlice::jvp(const std::vector<Array>& primals,
                                     const std::vector<Array>& tangents,
                                     std::vector<Array>&) const {
  std::vector<Array> in = {tangents[0]};
  for (size_t i = 1; i < primals.size(); ++i) in.push_back(primals[i]);
  return ad::rebind(*this, in);
}
std::vector<Array> DynamicSlice::transpose(const std::vector<Array>& cts,
                                           const std::vector<LinearIn>& ins) const {
  std::vector<Array> idx;
  for (size_t i = 1; i < ins.size(); ++i) idx.push_back(ins[i].value);
  std::vector<Array> out(ins.size());
  out[0] = dus_into_zeros(ins[0].type, cts[0], idx);
  return out;
}

std::vector<Array> DynamicUpdateSlice::jvp(const std::vector<Array>& primals,
                                           const std::vector<Array>& tangents,
                                           std::vector<Array>&) const {
  Array like = ad::first_valid(tangents);
  std::vector<Array> in = {ad::instantiate(tangents[0], primals[0].type(), like),
                           ad::instantiate(tangents[1], primals[1].type(), like)};
  for (size_t i = 2; i < primals.size(); ++i) in.push_back(primals[i]);
  return ad::rebind(*this, in);
}
std::vector<Array> DynamicUpdateSlice::transpose(const std::vector<Array>& cts,
                                                 const std::vector<LinearIn>& ins) const {
  const Array& ct = cts[0];
  std::vector<Array> idx;
  for (size_t i = 2; i < ins.size(); ++i) idx.push_back(ins[i].value);
  std::vector<Array> out(ins.size());
  if (ins[0].linear()) {
    out[0] = ad::or_replicated(
        [&](const Array& c) {
          std::vector<Array> in = {c, ad::zeros_shaped(ins[1].type.shape, c)};
          in.insert(in.end(), idx.begin(), idx.end());
          return bind1(std::make_shared<DynamicUpdateSlice>(), in);
        },
        ct);
  }
  if (ins[1].linear()) {
    std::vector<Array> in = {ct};
    in.insert(in.end(), idx.begin(), idx.end());
    out[1] = bind1(std::make_shared<DynamicSlice>(ins[1].type.shape), in);
  }
  return out;
}

// ---- Batching rules (vmap): the batch at 0 and the dimension parameters shifted past
// it; operands that must agree in shape (concatenate, pad's value, the updates of
// dynamic_update_slice) are broadcast along the batch; batched start indices turn
// dynamic_slice / dynamic_update_slice into a gather / scatter with a batching dim.

namespace {
template <class V>
V prepend(V v, typename V::value_type x) {
  v.insert(v.begin(), x);
  return v;
}
// Every operand with the batch at 0 (unbatched ones broadcast along it).
std::vector<Array> all_front(const std::vector<Array>& args, const std::vector<int>& dims,
                             size_t from = 0, size_t to = SIZE_MAX) {
  std::vector<Array> r;
  for (size_t i = from; i < std::min(to, args.size()); ++i)
    r.push_back(detail::batch_at_front(args[i], dims[i]));
  return r;
}
// Batched start indices as one int32 [B, n] index array (starts args[first..]).
Array stacked_starts(const std::vector<Array>& args, const std::vector<int>& dims, size_t first) {
  std::vector<Array> cols;
  for (size_t i = first; i < args.size(); ++i)
    cols.push_back(detail::batch_at_front(astype(args[i], int32), dims[i]));
  return stack(cols, 1);
}
// The index array's batch sharding for a gather / scatter result: the batch entry
// on dim 0, the rest unsharded.
ShardingArg batch_only(const Array& like) {
  const detail::BatchAxis& b = detail::batch_axis();
  if (b.mesh.empty() && like.type().sharding.mesh().empty()) return {};
  AbstractMesh m = like.type().sharding.mesh().empty() ? b.mesh : like.type().sharding.mesh();
  return NamedSharding(m, PartitionSpec(std::vector<PartitionEntry>{b.entry}));
}
}  // namespace

detail::Batched Reshape::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  // The batched reshape keeps dimension 0 whole; its layout is the per-example one's
  // with the batch entry in front (the rule could not always tell on its own).
  return detail::batch_unary_front(
      std::make_shared<Reshape>(prepend(sizes_, detail::batch_axis().size),
                                out_sharding_
                                    ? detail::batched_sharding(out_sharding_, 0, name())
                                    : detail::batched_out_sharding(*this, args, dims, 0, 0)),
      args[0], dims[0]);
}
detail::Batched Transpose::batch(const std::vector<Array>& args,
                                 const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<Transpose>(prepend(detail::shifted(perm_), 0)),
                                   args[0], dims[0]);
}
detail::Batched Squeeze::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<Squeeze>(detail::shifted(dims_)), args[0],
                                   dims[0]);
}
detail::Batched BroadcastInDim::batch(const std::vector<Array>& args,
                                      const std::vector<int>& dims) const {
  return detail::batch_unary_front(
      std::make_shared<BroadcastInDim>(prepend(shape_, detail::batch_axis().size),
                                       prepend(detail::shifted(bdims_), 0),
                                       detail::batched_sharding(out_sharding_, 0, name())),
      args[0], dims[0]);
}
detail::Batched Slice::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_unary_front(
      std::make_shared<Slice>(prepend(start_, 0), prepend(limit_, detail::batch_axis().size),
                              strides_.empty() ? strides_ : prepend(strides_, 1)),
      args[0], dims[0]);
}
detail::Batched Rev::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<Rev>(detail::shifted(dims_)), args[0], dims[0]);
}
detail::Batched Split::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return detail::batch_unary_front(std::make_shared<Split>(sizes_, axis_ + 1), args[0], dims[0]);
}
detail::Batched Concatenate::batch(const std::vector<Array>& args,
                                   const std::vector<int>& dims) const {
  return {{detail::bind1(std::make_shared<Concatenate>(dim_ + 1), all_front(args, dims))}, {0}};
}

detail::Batched Pad::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  auto p = std::make_shared<Pad>(prepend(lo_, 0), prepend(hi_, 0), prepend(interior_, 0));
  Array x = detail::batch_at_front(args[0], dims[0]);
  if (dims[1] < 0) return {{detail::bind1(p, {x, args[1]})}, {0}};
  // A batched padding value: pad with zeros, then put each example's value where the
  // padding went (a mask padded the same way marks the original elements).
  Array padded = detail::bind1(p, {x, zeros({}, args[1].dtype())});
  Array inside = detail::bind1(p, {full_like(x, 1.0, bool_), full({}, 0.0, bool_)});
  Array v = detail::batch_full(args[1], dims[1], padded.type());
  return {{where(inside, padded, v)}, {0}};
}

detail::Batched DynamicSlice::batch(const std::vector<Array>& args,
                                    const std::vector<int>& dims) const {
  bool starts_batched = false;
  for (size_t i = 1; i < args.size(); ++i) starts_batched = starts_batched || dims[i] >= 0;
  Array x = detail::batch_at_front(args[0], dims[0]);
  if (!starts_batched) {
    std::vector<Array> ins{x, zeros({}, args.size() > 1 ? args[1].dtype() : int32)};
    for (size_t i = 1; i < args.size(); ++i) ins.push_back(args[i]);
    return {{detail::bind1(
                std::make_shared<DynamicSlice>(prepend(sizes_, detail::batch_axis().size)), ins)},
            {0}};
  }
  GatherDimensionNumbers g;
  for (int d = 1; d <= static_cast<int>(sizes_.size()); ++d) {
    g.offset_dims.push_back(d);
    g.start_index_map.push_back(d);
  }
  g.operand_batching_dims = {0};
  g.start_indices_batching_dims = {0};
  Array idx = stacked_starts(args, dims, 1);
  return {{gather(x, idx, g, prepend(sizes_, 1),
                  {.out_sharding = batch_only(x), .mode = IndexMode::Clip})},
          {0}};
}

detail::Batched DynamicUpdateSlice::batch(const std::vector<Array>& args,
                                          const std::vector<int>& dims) const {
  bool starts_batched = false;
  for (size_t i = 2; i < args.size(); ++i) starts_batched = starts_batched || dims[i] >= 0;
  std::vector<Array> xu = all_front(args, dims, 0, 2);
  if (!starts_batched) {
    std::vector<Array> ins = xu;
    ins.push_back(zeros({}, args.size() > 2 ? args[2].dtype() : int32));
    for (size_t i = 2; i < args.size(); ++i) ins.push_back(args[i]);
    return {{detail::bind1(shared_from_this(), ins)}, {0}};
  }
  ScatterDimensionNumbers s;
  for (int d = 1; d < xu[0].ndim(); ++d) {
    s.update_window_dims.push_back(d);
    s.scatter_dims_to_operand_dims.push_back(d);
  }
  s.operand_batching_dims = {0};
  s.scatter_indices_batching_dims = {0};
  Array idx = stacked_starts(args, dims, 2);
  return {{scatter(ScatterKind::Set, xu[0], idx, xu[1], s,
                   {.out_sharding = xu[0].type().sharding.mesh().empty()
                                        ? ShardingArg{}
                                        : ShardingArg{xu[0].type().sharding},
                    .mode = IndexMode::Clip})},
          {0}};
}

}  // namespace tsr::prim
