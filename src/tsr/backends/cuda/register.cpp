// The CUDA kernel table: one line per primitive name, as the CPU's. A primitive with
// a CPU kernel and none here is listed in tests/unit/cuda_coverage_test.cpp's
// pending list, which the test keeps honest in both directions.
#include "tsr/backends/cuda/cuda_kernels.h"

namespace tsr::detail {

void register_cuda_kernels() {
  // The strided kernels take at most kMaxDims dims; complex only where listed below.
  auto reg = [](const char* name, KernelFn fn) {
    register_kernel(name, "cuda", fn);
    set_kernel_caps(name, "cuda", {.complex = false, .max_rank = cuda::kMaxDims});
  };
  for (const char* n :
       {"neg", "abs",   "sign",     "floor", "ceil",      "round",  "exp",    "exp2",
        "log", "log1p", "expm1",    "sqrt",  "rsqrt",     "square", "sin",    "cos",
        "tan", "tanh",  "logistic", "erf",   "is_finite", "not",    "erf_inv"})
    reg(n, cuda::unary);
  for (const char* n : {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and",
                        "or", "xor", "eq", "ne", "lt", "le", "gt", "ge"})
    reg(n, cuda::binary);
  reg("integer_pow", cuda::integer_pow);
  reg("select_n", cuda::select_n);
  reg("clamp", cuda::clamp);
  reg("convert_element_type", cuda::convert_element_type);
  reg("fused_elementwise", cuda::fused_elementwise);

  for (const char* n :
       {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"})
    reg(n, cuda::reduce);
  for (const char* n : {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"})
    reg(n, cuda::cumulative);
  reg("argmax", cuda::arg_reduce);
  reg("argmin", cuda::arg_reduce);
  reg("dot_general", cuda::dot_general);
  reg("triangular_solve", cuda::triangular_solve);
  reg("cholesky", cuda::cholesky);
  reg("lu", cuda::lu);
  reg("qr", cuda::qr);
  reg("eigh", cuda::eigh);
  reg("svd", cuda::svd);
  reg("fft", cuda::fft);
  reg("conv_general_dilated", cuda::conv_general_dilated);

  for (const char* n : {"reshape", "squeeze", "bitcast_convert_type", "reshard", "stop_gradient"})
    reg(n, cuda::copy_input);
  reg("transpose", cuda::transpose);
  reg("broadcast_in_dim", cuda::broadcast_in_dim);
  reg("slice", cuda::slice);
  reg("rev", cuda::rev);
  reg("pad", cuda::pad);
  reg("concatenate", cuda::concatenate);
  reg("split", cuda::split);
  reg("dynamic_slice", cuda::dynamic_slice);
  reg("dynamic_update_slice", cuda::dynamic_update_slice);
  reg("iota", cuda::iota);
  reg("full", cuda::full);

  for (const char* n : {"random_bits", "random_uniform", "random_randint"})
    reg(n, cuda::random_bits);
  reg("threefry2x32", cuda::threefry2x32);

  for (const char* n : {"real", "imag", "conj"}) reg(n, cuda::complex_part);
  reg("complex", cuda::make_complex);

  reg("gather", cuda::gather);
  for (const char* n :
       {"scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"})
    reg(n, cuda::scatter);
  reg("sort", cuda::sort);
  reg("top_k", cuda::top_k);
  reg("searchsorted", cuda::searchsorted);
  for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min"})
    reg(n, cuda::reduce_window);
  reg("select_and_gather_add", cuda::select_and_gather_add);
  reg("select_and_scatter_add", cuda::select_and_scatter_add);
  // The kernels that move complex elements as bytes, or compute on them: the other
  // complex primitives (arithmetic, reductions, scans, dot_general, iota, conversions)
  // are refused on CUDA devices when a step is lowered (check_kernel_caps).
  // clang-format off
  for (const char* n :
       {"select_n", "reshape", "squeeze", "bitcast_convert_type", "reshard", "stop_gradient",
        "transpose", "broadcast_in_dim", "slice", "rev", "pad", "concatenate", "split",
        "dynamic_slice", "dynamic_update_slice", "full", "gather", "scatter", "scatter_add",
        "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "real", "imag", "conj",
        "complex", "fft"})
    // clang-format on
    set_kernel_caps(n, "cuda", {.complex = true, .max_rank = cuda::kMaxDims});
}

}  // namespace tsr::detail
