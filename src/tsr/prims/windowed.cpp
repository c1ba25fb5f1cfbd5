// Rules of the windowed reductions and the pooling-gradient primitives (spec §12.15):
// shapes as JAX's _common_reduce_window_shape_rule, the §12.8 varying-out sharding rule
// (the operand's sharding, a changed sharded dim must stay divisible). The kernel needs
// every windowed dimension whole; the lowering slices the result back to its type.
// AD and batching follow lax/windowed_reductions.py.
#include "tsr/prims/windowed.h"

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;

namespace {
bool register_all() {
  for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min",
                        "select_and_gather_add", "select_and_scatter_add"})
    register_primitive(n);
  declare_ad("reduce_window_sum", AdKind::Linear);
  declare_ad("reduce_window_max", AdKind::Differentiable);
  declare_ad("reduce_window_min", AdKind::Differentiable);
  declare_ad("select_and_gather_add", AdKind::Linear);
  declare_ad("select_and_scatter_add", AdKind::Linear);
  return true;
}
const bool registered = register_all();

// JAX's _common_reduce_window_shape_rule checks, named for `prim`.
void check_window(const char* prim, const Window& w, const ArrayType& x) {
  auto count = [&](const char* what, size_t n) {
    if (n != w.dims.size())
      throw TypeError(std::string("[") + prim + "] reduce_window got inconsistent " + what +
                      " and window_dimensions; got " + what + " of length " + std::to_string(n) +
                      " and window_dimensions " + p_ints(w.dims) +
                      ". Give one entry per operand dimension.");
  };
  if (static_cast<int>(w.dims.size()) != x.ndim())
    throw TypeError(std::string("[") + prim +
                    "] reduce_window got the wrong number of window_dimensions for operand array "
                    "with " +
                    std::to_string(x.ndim()) + " dimensions; got window_dimensions " +
                    p_ints(w.dims) + ". Got " + x.str() +
                    "; expected one window size per dimension (1 leaves a dimension alone).");
  count("window_strides", w.strides.size());
  count("padding", w.padding.size());
  count("base_dilation", w.base_dilation.size());
  count("window_dilation", w.window_dilation.size());
  auto positive = [&](const char* what, const std::vector<int64_t>& v) {
    for (int64_t e : v)
      if (e <= 0)
        throw TypeError(std::string("[") + prim + "] reduce_window " + what +
                        " must have every element be positive, got " + p_ints(v) + ". Got " +
                        x.str() + "; expected sizes >= 1.");
  };
  positive("window_dimensions", w.dims);
  positive("window_strides", w.strides);
  positive("base_dilation", w.base_dilation);
  positive("window_dilation", w.window_dilation);
}

// A window's kernel layout: the operand's entries with the windowed dims unsharded,
// except a dimension whose windows tile each device's block exactly (no padding, no
// dilation, window == stride, the block a multiple of the stride): there every device
// reduces its own block (2x2 stride-2 pooling of a sharded image moves nothing).
PartitionSpec window_layout(const ArrayType& x, const Window& w) {
  std::vector<bool> gather = w.windowed();
  if (!x.sharding.mesh().empty()) {
    auto e = entries_of(x);
    for (size_t d = 0; d < gather.size(); ++d) {
      if (!gather[d] || e[d].is_none()) continue;
      const int64_t k = entry_size(e[d], x.sharding.mesh());
      const bool tiles = w.padding[d] == std::pair<int64_t, int64_t>{0, 0} &&
                         w.base_dilation[d] == 1 && w.window_dilation[d] == 1 &&
                         w.dims[d] == w.strides[d] && x.shape[d] % k == 0 &&
                         (x.shape[d] / k) % w.strides[d] == 0;
      if (tiles) gather[d] = false;
    }
  }
  return unshard_dims(x, gather);
}

Batched batch_windowed(const Primitive& p, const std::vector<Array>& args,
                       const std::vector<int>& dims, const std::function<PrimPtr()>& with_leading) {
  std::vector<Array> ins;
  for (size_t i = 0; i < args.size(); ++i) ins.push_back(batch_at_front(args[i], dims[i]));
  return {{bind1(with_leading(), ins)}, {0}};
}
}  // namespace

// ---- Window -----------------------------------------------------------------------

Shape Window::out_shape(const Shape& in) const {
  Shape out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t padded = dilated_size(in[d], base_dilation[d]) + padding[d].first + padding[d].second;
    int64_t win = dilated_size(dims[d], window_dilation[d]);
    out[d] = padded < win ? 0 : (padded - win) / strides[d] + 1;
  }
  return out;
}

std::vector<bool> Window::windowed() const {
  std::vector<bool> r;
  for (size_t d = 0; d < dims.size(); ++d)
    r.push_back(dims[d] != 1 || strides[d] != 1 ||
                padding[d] != std::pair<int64_t, int64_t>{0, 0} || base_dilation[d] != 1 ||
                window_dilation[d] != 1);
  return r;
}

Window Window::with_leading_dim() const {
  Window w = *this;
  w.dims.insert(w.dims.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.padding.insert(w.padding.begin(), {0, 0});
  w.base_dilation.insert(w.base_dilation.begin(), 1);
  w.window_dilation.insert(w.window_dilation.begin(), 1);
  return w;
}

std::string Window::params() const {
  std::string pads = "(";
  for (size_t i = 0; i < padding.size(); ++i)
    pads += (i ? ", " : "") + std::string("(") + std::to_string(padding[i].first) + ", " +
            std::to_string(padding[i].second) + ")";
  pads += padding.size() == 1 ? ",)" : ")";
  return "window_dimensions=" + p_ints(dims) + " window_strides=" + p_ints(strides) +
         " padding=" + pads + " base_dilation=" + p_ints(base_dilation) +
         " window_dilation=" + p_ints(window_dilation);
}

// ---- reduce_window -----------------------------------------------------------------

const char* ReduceWindow::name() const {
  return op_ == WindowOp::Sum   ? "reduce_window_sum"
         : op_ == WindowOp::Max ? "reduce_window_max"
                                : "reduce_window_min";
}

std::vector<ArrayType> ReduceWindow::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  check_window(name(), w_, x);
  if (op_ == WindowOp::Sum && x.dtype == DType::Bool)
    throw TypeError(
        "[reduce_window_sum] reduce_window_sum does not accept dtype bool. Accepted "
        "dtypes are subtypes of number. Got " +
        x.str() + "; expected a number. Convert with astype(int32) first.");
  no_unreduced(name(), in);
  return {varying_out(w_.out_shape(x.shape), x, "reduce_window", name())};
}

Lowering ReduceWindow::partition(const std::vector<ArrayType>& in,
                                 const std::vector<ArrayType>&) const {
  PartitionSpec s = window_layout(in[0], w_);
  return {{s}, {s}};
}

std::vector<Array> ReduceWindow::jvp(const std::vector<Array>& primals,
                                     const std::vector<Array>& tangents,
                                     std::vector<Array>&) const {
  if (op_ == WindowOp::Sum) return ad::linear_jvp(*this, primals, tangents);
  // lax's _reduce_window_chooser_jvp_rule: the tangent at the chosen element.
  return {bind1(std::make_shared<SelectAndGatherAdd>(op_, w_), {tangents[0], primals[0]})};
}

// lax's _reduce_window_sum_transpose_rule: the cotangent, padded (interior: stride - 1)
// as a convolution's input gradient is, summed over the window again with the base
// dilation as the stride.
std::vector<Array> ReduceWindow::transpose(const std::vector<Array>& cts,
                                           const std::vector<LinearIn>& ins) const {
  if (op_ != WindowOp::Sum)
    throw NotImplementedError(std::string("[transpose] ") + name() +
                              " is not linear. Got a transpose of it; expected "
                              "reduce_window_sum (max and min pooling differentiate through "
                              "select_and_gather_add).");
  const Shape& in_shape = ins[0].type.shape;
  const Shape& out_shape = cts[0].shape();
  const size_t r = in_shape.size();
  std::vector<std::tuple<int64_t, int64_t, int64_t>> cfg;
  for (size_t d = 0; d < r; ++d) {
    int64_t lhs = dilated_size(in_shape[d], w_.base_dilation[d]);
    int64_t rhs = dilated_size(w_.dims[d], w_.window_dilation[d]);
    int64_t outd = dilated_size(out_shape[d], w_.strides[d]);
    int64_t before = rhs - w_.padding[d].first - 1;
    int64_t after = lhs + rhs - 1 - outd - before;
    cfg.emplace_back(before, after, w_.strides[d] - 1);
  }
  Array padded = ad::or_replicated([&](const Array& c) { return pad(c, 0, cfg); }, cts[0]);
  Window back{w_.dims, w_.base_dilation, std::vector<std::pair<int64_t, int64_t>>(r, {0, 0}),
              std::vector<int64_t>(r, 1), w_.window_dilation};
  Array ct = bind1(std::make_shared<ReduceWindow>(WindowOp::Sum, back), {padded});
  return {ad::coerce(ct, ins[0].type, name(), "cotangent")};
}

Batched ReduceWindow::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_windowed(*this, args, dims,
                        [&] { return std::make_shared<ReduceWindow>(op_, w_.with_leading_dim()); });
}

// ---- select_and_gather_add / select_and_scatter_add --------------------------------

void WindowSelect::check(const ArrayType& a, const ArrayType& x, const Shape& a_shape) const {
  check_window(name(), w_, x);
  if (a.shape != a_shape)
    throw TypeError(std::string("[") + name() + "] " + name() + " got a first operand of shape " +
                    shape_str(a.shape) + " for an operand of shape " + shape_str(x.shape) +
                    ". Got " + a.str() + "; expected shape " + shape_str(a_shape) + ".");
  if (!is_floating(a.dtype))
    throw TypeError(std::string("[") + name() + "] " + name() + " adds float values. Got " +
                    a.str() + "; expected a float array.");
}

Lowering WindowSelect::partition(const std::vector<ArrayType>& in,
                                 const std::vector<ArrayType>&) const {
  PartitionSpec s = window_layout(in[1], w_);
  return {{s, s}, {s}};
}

std::string WindowSelect::params() const {
  return std::string("select_prim=") + (select_ == WindowOp::Max ? "ge " : "le ") + w_.params();
}

// Linear in operand 0; the selecting operand's own tangent does not matter.
std::vector<Array> WindowSelect::jvp(const std::vector<Array>& primals,
                                     const std::vector<Array>& tangents,
                                     std::vector<Array>&) const {
  if (!tangents[0].valid()) return {Array()};
  return {bind1(shared_from_this(), {tangents[0], primals[1]})};
}

std::vector<Array> WindowSelect::transpose(const std::vector<Array>& cts,
                                           const std::vector<LinearIn>& ins) const {
  if (ins[1].linear())
    throw NotImplementedError(std::string("[transpose] ") + name() +
                              " is linear in its first operand only. Got a linear selecting "
                              "operand; expected a known one.");
  Array ct = bind1(transposed(), {cts[0], ins[1].value});
  return {ad::coerce(ct, ins[0].type, name(), "cotangent"), Array()};
}

Batched WindowSelect::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return batch_windowed(*this, args, dims, [&] { return with_window(w_.with_leading_dim()); });
}

std::vector<ArrayType> SelectAndGatherAdd::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &t = in.at(0), &x = in.at(1);
  check(t, x, x.shape);
  no_unreduced(name(), in);
  ArrayType o = varying_out(w_.out_shape(x.shape), x, "reduce_window", name());
  o.dtype = t.dtype;
  o.weak = t.weak;
  return {o};
}

PrimPtr SelectAndGatherAdd::with_window(Window w) const {
  return std::make_shared<SelectAndGatherAdd>(select_, std::move(w));
}
PrimPtr SelectAndGatherAdd::transposed() const {
  return std::make_shared<SelectAndScatterAdd>(select_, w_);
}

std::vector<ArrayType> SelectAndScatterAdd::infer(const std::vector<ArrayType>& in) const {
  const ArrayType &src = in.at(0), &x = in.at(1);
  check(src, x, w_.out_shape(x.shape));
  no_unreduced(name(), in);
  // Spec §12.15: the operand's sharding.
  return {make_type(x.shape, src.dtype, src.weak, rule_mesh(in), entries_of(x))};
}

PrimPtr SelectAndScatterAdd::with_window(Window w) const {
  return std::make_shared<SelectAndScatterAdd>(select_, std::move(w));
}
PrimPtr SelectAndScatterAdd::transposed() const {
  return std::make_shared<SelectAndGatherAdd>(select_, w_);
}

}  // namespace tsr::prim
