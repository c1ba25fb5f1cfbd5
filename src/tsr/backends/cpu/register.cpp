// The CPU kernel table: one line per primitive name. Families share a kernel
// that reads its op from the primitive's parameters.
#include "tsr/backends/common/gather_scatter_plan.h"
#include "tsr/backends/cpu/cpu_kernels.h"

namespace tsr::detail {

void register_cpu_kernels() {
  constexpr const char* kCpu = "cpu";
  auto reg = [&](const char* name, KernelFn fn) { register_kernel(name, kCpu, fn); };

  // Unary (prim::UnaryOp order).
  reg("neg", cpu::unary);
  reg("abs", cpu::unary);
  reg("sign", cpu::unary);
  reg("floor", cpu::unary);
  reg("ceil", cpu::unary);
  reg("round", cpu::unary);
  reg("exp", cpu::unary);
  reg("exp2", cpu::unary);
  reg("log", cpu::unary);
  reg("log1p", cpu::unary);
  reg("expm1", cpu::unary);
  reg("sqrt", cpu::unary);
  reg("rsqrt", cpu::unary);
  reg("square", cpu::unary);
  reg("sin", cpu::unary);
  reg("cos", cpu::unary);
  reg("tan", cpu::unary);
  reg("tanh", cpu::unary);
  reg("logistic", cpu::unary);
  reg("erf", cpu::unary);
  reg("is_finite", cpu::unary);
  reg("not", cpu::unary);
  reg("erf_inv", cpu::unary);
  reg("integer_pow", cpu::integer_pow);

  // Binary (prim::BinaryOp order).
  reg("add", cpu::binary);
  reg("sub", cpu::binary);
  reg("mul", cpu::binary);
  reg("div", cpu::binary);
  reg("rem", cpu::binary);
  reg("pow", cpu::binary);
  reg("max", cpu::binary);
  reg("min", cpu::binary);
  reg("atan2", cpu::binary);
  reg("and", cpu::binary);
  reg("or", cpu::binary);
  reg("xor", cpu::binary);
  reg("eq", cpu::binary);
  reg("ne", cpu::binary);
  reg("lt", cpu::binary);
  reg("le", cpu::binary);
  reg("gt", cpu::binary);
  reg("ge", cpu::binary);

  reg("select_n", cpu::select_n);
  reg("clamp", cpu::clamp);
  reg("convert_element_type", cpu::convert_element_type);
  reg("real", cpu::complex_part);
  reg("imag", cpu::complex_part);
  reg("conj", cpu::complex_part);
  reg("complex", cpu::make_complex);
  reg("fft", cpu::fft);
  reg("fused_elementwise", cpu::fused_elementwise);

  // Reductions.
  reg("reduce_sum", cpu::reduce);
  reg("reduce_prod", cpu::reduce);
  reg("reduce_max", cpu::reduce);
  reg("reduce_min", cpu::reduce);
  reg("reduce_and", cpu::reduce);
  reg("reduce_or", cpu::reduce);
  reg("argmax", cpu::arg_reduce);
  reg("argmin", cpu::arg_reduce);

  // Cumulative ops, sort, top_k and friends.
  reg("cumsum", cpu::cumulative);
  reg("cumprod", cpu::cumulative);
  reg("cummax", cpu::cumulative);
  reg("cummin", cpu::cumulative);
  reg("cumlogsumexp", cpu::cumulative);
  reg("sort", cpu::sort);
  reg("top_k", cpu::top_k);
  reg("searchsorted", cpu::searchsorted);

  // Decompositions (LAPACK).
  reg("cholesky", cpu::cholesky);
  reg("triangular_solve", cpu::triangular_solve);
  reg("lu", cpu::lu);
  reg("qr", cpu::qr);
  reg("eigh", cpu::eigh);
  reg("svd", cpu::svd);

  // Windowed reductions and pooling gradients.
  reg("conv_general_dilated", cpu::conv_general_dilated);
  reg("reduce_window_sum", cpu::reduce_window);
  reg("reduce_window_max", cpu::reduce_window);
  reg("reduce_window_min", cpu::reduce_window);
  reg("select_and_gather_add", cpu::select_and_gather_add);
  reg("select_and_scatter_add", cpu::select_and_scatter_add);

  reg("dot_general", cpu::dot_general);

  // Shape.
  reg("reshape", cpu::copy_input);
  reg("squeeze", cpu::copy_input);
  reg("bitcast_convert_type", cpu::copy_input);  // the bytes are the same
  reg("transpose", cpu::transpose);
  reg("broadcast_in_dim", cpu::broadcast_in_dim);
  reg("slice", cpu::slice);
  reg("dynamic_slice", cpu::dynamic_slice);
  reg("dynamic_update_slice", cpu::dynamic_update_slice);
  reg("pad", cpu::pad);
  reg("concatenate", cpu::concatenate);
  reg("split", cpu::split);
  reg("rev", cpu::rev);

  // Indexing: gather and scatter.
  reg("gather", cpu::gather);
  reg("scatter", cpu::scatter);
  reg("scatter_add", cpu::scatter);
  reg("scatter_sub", cpu::scatter);
  reg("scatter_mul", cpu::scatter);
  reg("scatter_min", cpu::scatter);
  reg("scatter_max", cpu::scatter);
  // The plans hold per-dim arrays of kCpuIndexingMaxDims entries.
  for (const char* n : {"gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul",
                        "scatter_min", "scatter_max"})
    set_kernel_caps(n, "cpu", {.max_rank = kCpuIndexingMaxDims});

  // Creation.
  reg("iota", cpu::iota);
  reg("full", cpu::full);

  // Random bits.
  reg("random_bits", cpu::random_bits);
  reg("random_uniform", cpu::random_bits);
  reg("random_randint", cpu::random_bits);
  reg("threefry2x32", cpu::threefry2x32);

  // A reshard whose local blocks already match is a copy.
  reg("reshard", cpu::copy_input);
  reg("stop_gradient", cpu::copy_input);
}

}  // namespace tsr::detail
