// Unary elementwise kernels, integer_pow, select_n, clamp and dtype conversion.
// Each op is a scalar function; loops over contiguous data call it with the op
// as a template constant so they vectorise. The float math (exp, tanh, ...) runs
// the SIMD kernels of vecmath.h instead where one exists. float16/bfloat16
// compute in float in blocks (widen, compute, round back), so every loop is over
// plain floats.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "tsr/backends/common/elementwise_apply.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/backends/cpu/vecmath.h"
#include "tsr/core/convert.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"

namespace tsr::detail::cpu {
namespace {

using prim::UnaryOp;

template <typename T>
inline constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Scratch block for the half types: small enough for the stack and L1.
constexpr int64_t kBlock = 512;

// ---- unary ----------------------------------------------------------------

constexpr bool float_only(UnaryOp op) { return unary_float_only(op); }

// Which stored types an op accepts (shared with the CUDA kernels); the others throw
// before any loop runs.
template <UnaryOp Op, typename T>
constexpr bool unary_supported() {
  return unary_accepts<Op, T>();
}

template <UnaryOp Op, typename T>
using UnaryOut = std::conditional_t<Op == UnaryOp::IsFinite, bool, T>;

// op(x) for bool, an integer or a float type (never a half type): the scalar code
// every platform shares (backends/common/elementwise_apply.h).
template <UnaryOp Op, typename T>
inline UnaryOut<Op, T> unary_op(T x) {
  return unary_apply<Op>(x);
}

template <UnaryOp Op, typename T>
void unary_loop(const T* x, UnaryOut<Op, T>* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = unary_op<Op>(x[i]);
}

// The SIMD kernel of the instruction set in use for a float / double op, or null.
template <UnaryOp Op, typename T>
auto vector_kernel() {
  if constexpr (std::is_same_v<T, float>) {
    return vecmath().unary_f32[static_cast<size_t>(Op)];
  } else if constexpr (std::is_same_v<T, double>) {
    return vecmath().unary_f64[static_cast<size_t>(Op)];
  } else {
    return nullptr;
  }
}

template <UnaryOp Op, typename T>
void unary_run(const KernelArgs& a) {
  if constexpr (kIsHalf<T>) {
    if constexpr (!unary_supported<Op, float>()) {
      unsupported_dtype(prim::unary_name(Op), dtype_v<T>, "a supported dtype");
    } else {
      const T* x = a.i<T>(0);
      int64_t n = numel((*a.in)[0].shape);
      alignas(64) float f[kBlock];
      for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        int64_t m = std::min(kBlock, n - i0);
        to_float(x + i0, f, m);
        if constexpr (Op == UnaryOp::IsFinite) {
          unary_loop<Op>(f, a.o<bool>(0) + i0, m);
        } else {
          if (auto k = vector_kernel<Op, float>()) {
            k(f, f, m);
          } else {
            unary_loop<Op>(f, f, m);
          }
          from_float(f, a.o<T>(0) + i0, m);
        }
      }
    }
  } else if constexpr (!unary_supported<Op, T>()) {
    unsupported_dtype(prim::unary_name(Op), dtype_v<T>,
                      float_only(Op) ? "a floating-point dtype" : "a numeric dtype");
  } else {
    const T* x = a.i<T>(0);
    auto* y = a.o<UnaryOut<Op, T>>(0);
    int64_t n = numel((*a.in)[0].shape);
    if constexpr (std::is_floating_point_v<T> && Op != UnaryOp::IsFinite) {
      if (auto k = vector_kernel<Op, T>()) {
        // The transcendental kernels are compute-bound: a second core halves them.
        parallel_ranges(n, kernel_threads(a.busy_devices), kParallelMin, 16,
                        [&](int64_t b, int64_t e) { k(x + b, y + b, e - b); });
        return;
      }
    }
    unary_loop<Op>(x, y, n);
  }
}

using Kernel = void (*)(const KernelArgs&);

// One table row per dtype: op index -> unary_run<op, T>.
template <typename T, size_t... I>
constexpr std::array<Kernel, sizeof...(I)> unary_table(std::index_sequence<I...>) {
  return {&unary_run<static_cast<UnaryOp>(I), T>...};
}

// ---- integer_pow ------------------------------------------------------------

// acc = x ** |y| by squaring, one vectorisable pass per bit of |y|.
template <typename T>
void ipow_block(const T* x, T* acc, T* base, int64_t m, int y) {
  unsigned e = y < 0 ? 0u - static_cast<unsigned>(y) : static_cast<unsigned>(y);
  for (int64_t j = 0; j < m; ++j) acc[j] = T(1);
  if (e == 0) return;
  for (int64_t j = 0; j < m; ++j) base[j] = x[j];
  for (;;) {
    if (e & 1u)
      for (int64_t j = 0; j < m; ++j) acc[j] = static_cast<T>(acc[j] * base[j]);
    e >>= 1;
    if (!e) break;
    for (int64_t j = 0; j < m; ++j) base[j] = static_cast<T>(base[j] * base[j]);
  }
}

template <typename T>
void integer_pow_typed(const KernelArgs& a, int y) {
  const T* x = a.i<T>(0);
  T* out = a.o<T>(0);
  int64_t n = numel((*a.in)[0].shape);
  if constexpr (std::is_same_v<T, bool>) {
    unsupported_dtype("integer_pow", DType::Bool, "a numeric dtype");
  } else if constexpr (kInt<T>) {
    using U = WrapUnsigned<T>;
    alignas(64) U xu[kBlock], acc[kBlock], base[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      int64_t m = std::min(kBlock, n - i0);
      for (int64_t j = 0; j < m; ++j) xu[j] = static_cast<U>(x[i0 + j]);
      ipow_block(xu, acc, base, m, y);
      for (int64_t j = 0; j < m; ++j) {
        T v = static_cast<T>(acc[j]);
        // A negative power of an integer is 0 unless the base is 1 or -1.
        if (y < 0) v = x[i0 + j] == T(1) ? T(1) : (x[i0 + j] == T(-1) ? v : T(0));
        out[i0 + j] = v;
      }
    }
  } else {
    using F = std::conditional_t<kIsHalf<T>, float, T>;
    alignas(64) F xf[kBlock], acc[kBlock], base[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      int64_t m = std::min(kBlock, n - i0);
      if constexpr (kIsHalf<T>) {
        to_float(x + i0, xf, m);
      } else {
        std::memcpy(xf, x + i0, sizeof(F) * m);
      }
      ipow_block(xf, acc, base, m, y);
      if (y < 0)
        for (int64_t j = 0; j < m; ++j) acc[j] = F(1) / acc[j];
      if constexpr (kIsHalf<T>) {
        from_float(acc, out + i0, m);
      } else {
        std::memcpy(out + i0, acc, sizeof(F) * m);
      }
    }
  }
}

// ---- select_n ---------------------------------------------------------------

// Selection moves bytes, so it is typed by element size only.
template <typename U, typename W>
void select_typed(const KernelArgs& a, int ncases, int64_t n, bool which_scalar) {
  const W* which = a.i<W>(0);
  U* out = a.o<U>(0);
  auto index = [ncases](W w) {
    int64_t k = static_cast<int64_t>(w);
    return static_cast<int>(std::clamp<int64_t>(k, 0, ncases - 1));
  };
  if (which_scalar) {
    const U* c = a.i<U>(1 + index(which[0]));
    if (c != out && n > 0) std::memcpy(out, c, sizeof(U) * n);
    return;
  }
  if (ncases == 1) {
    if (a.i<U>(1) != out && n > 0) std::memcpy(out, a.i<U>(1), sizeof(U) * n);
  } else if (ncases == 2 && !std::is_same_v<U, Bytes16>) {
    if constexpr (!std::is_same_v<U, Bytes16>) {  // 16-byte items: the loop below
      // Branch-free through a mask: `which` is often a data-dependent predicate (a relu
      // mask), where a branch per element mispredicts half the time. A bool is read as
      // its byte, which GCC vectorises ~4x better than a bool compare (~20x overall).
      using R = std::conditional_t<std::is_same_v<W, bool>, unsigned char, W>;
      const R* w = reinterpret_cast<const R*>(which);
      const U* c0 = a.i<U>(1);
      const U* c1 = a.i<U>(2);
      parallel_ranges(n, kernel_threads(a.busy_devices), kParallelMin, 64,
                      [&](int64_t b, int64_t e) {
                        for (int64_t i = b; i < e; ++i) {
                          U m = static_cast<U>(U(0) - static_cast<U>(w[i] > R(0)));
                          out[i] = static_cast<U>(c0[i] ^ ((c0[i] ^ c1[i]) & m));
                        }
                      });
    }
  } else {
    std::vector<const U*> cases(ncases);
    for (int k = 0; k < ncases; ++k) cases[k] = a.i<U>(1 + k);
    for (int64_t i = 0; i < n; ++i) out[i] = cases[index(which[i])][i];
  }
}

template <typename U>
void select_sized(const KernelArgs& a) {
  const LocalType& w = (*a.in)[0];
  int ncases = static_cast<int>(a.in->size()) - 1;
  int64_t n = numel((*a.out)[0].shape);
  bool scalar = w.shape.empty() && !(*a.out)[0].shape.empty();
  switch (w.dtype) {
    case DType::Bool:
      return select_typed<U, bool>(a, ncases, n, scalar);
    case DType::Int32:
      return select_typed<U, int32_t>(a, ncases, n, scalar);
    case DType::Int64:
      return select_typed<U, int64_t>(a, ncases, n, scalar);
    case DType::Int8:
      return select_typed<U, int8_t>(a, ncases, n, scalar);
    case DType::Int16:
      return select_typed<U, int16_t>(a, ncases, n, scalar);
    case DType::UInt8:
      return select_typed<U, uint8_t>(a, ncases, n, scalar);
    case DType::UInt16:
      return select_typed<U, uint16_t>(a, ncases, n, scalar);
    case DType::UInt32:
      return select_typed<U, uint32_t>(a, ncases, n, scalar);
    case DType::UInt64:
      return select_typed<U, uint64_t>(a, ncases, n, scalar);
    default:
      unsupported_dtype("select_n", w.dtype, "bool or an integer dtype for `which`");
  }
}

// ---- clamp ------------------------------------------------------------------

// The value compared: the half types compare as float, which is exact.
template <typename T>
inline auto key(T v) {
  if constexpr (kIsHalf<T>) {
    return to_float(v);
  } else {
    return v;
  }
}

// min(max(x, lo), hi) with NaN propagating (as lax.max / lax.min). LoS/HiS say
// whether lo / hi are arrays (1) or scalars (0).
template <typename T, int LoS, int HiS>
void clamp_loop(const T* lo, const T* x, const T* hi, T* out, int64_t n) {
  const T l0 = lo[0], h0 = hi[0];  // hoisted: lets the scalar cases vectorise
  for (int64_t i = 0; i < n; ++i) {
    T l = LoS ? lo[i] : l0, v = x[i], h = HiS ? hi[i] : h0;
    auto kv = key(v);
    T m = (kv > key(l) || kv != kv) ? v : l;
    auto km = key(m);
    out[i] = (km < key(h) || km != km) ? m : h;
  }
}

template <typename T>
void clamp_typed(const KernelArgs& a) {
  const T* lo = a.i<T>(0);
  const T* x = a.i<T>(1);
  const T* hi = a.i<T>(2);
  T* out = a.o<T>(0);
  int64_t n = numel((*a.in)[1].shape);
  if (n == 0) return;
  bool lo_arr = !(*a.in)[0].shape.empty();
  bool hi_arr = !(*a.in)[2].shape.empty();
  if (lo_arr && hi_arr) {
    clamp_loop<T, 1, 1>(lo, x, hi, out, n);
  } else if (lo_arr) {
    clamp_loop<T, 1, 0>(lo, x, hi, out, n);
  } else if (hi_arr) {
    clamp_loop<T, 0, 1>(lo, x, hi, out, n);
  } else {
    clamp_loop<T, 0, 0>(lo, x, hi, out, n);
  }
}

// ---- convert_element_type -------------------------------------------------

template <typename To, typename From>
void cast_loop(const From* s, To* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = cast_element<To>(s[i]);
}

// Sources wider than float's 24-bit mantissa reach the half types through
// round_to_odd_float (int64 beyond 2^53 may still round twice, via double).
template <typename From>
inline constexpr bool kWideSource = std::is_same_v<From, double> || std::is_same_v<From, int32_t> ||
                                    std::is_same_v<From, uint32_t> ||
                                    std::is_same_v<From, int64_t> || std::is_same_v<From, uint64_t>;

template <typename To, typename From>
void convert_typed(const void* src, void* dst, int64_t n) {
  const From* s = static_cast<const From*>(src);
  To* d = static_cast<To*>(dst);
  if constexpr (kIsHalf<From> || kIsHalf<To>) {
    alignas(64) float f[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      int64_t m = std::min(kBlock, n - i0);
      if constexpr (kIsHalf<From>) {
        to_float(s + i0, f, m);
      } else if constexpr (kWideSource<From>) {
        for (int64_t j = 0; j < m; ++j) f[j] = round_to_odd_float(static_cast<double>(s[i0 + j]));
      } else {
        cast_loop(s + i0, f, m);
      }
      if constexpr (kIsHalf<To>) {
        from_float(f, d + i0, m);
      } else {
        cast_loop(f, d + i0, m);
      }
    }
  } else {
    cast_loop(s, d, n);
  }
}

}  // namespace

void unary(const KernelArgs& a) {
  if (is_complex((*a.in)[0].dtype)) return unary_complex(a);
  auto op = static_cast<const prim::Unary&>(*a.prim).op();
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    static constexpr auto table = unary_table<T>(std::make_index_sequence<prim::kNumUnaryOps>{});
    table[static_cast<size_t>(op)](a);
  });
}

void integer_pow(const KernelArgs& a) {
  if (is_complex((*a.in)[0].dtype)) return integer_pow_complex(a);
  int y = static_cast<const prim::IntegerPow&>(*a.prim).y();
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) { integer_pow_typed<decltype(tag)>(a, y); });
}

void select_n(const KernelArgs& a) {
  switch (itemsize((*a.out)[0].dtype)) {
    case 1:
      return select_sized<uint8_t>(a);
    case 2:
      return select_sized<uint16_t>(a);
    case 4:
      return select_sized<uint32_t>(a);
    case 8:
      return select_sized<uint64_t>(a);
    default:  // complex128
      return select_sized<Bytes16>(a);
  }
}

void clamp(const KernelArgs& a) {
  // Every dtype, bool included (false < true), as lax.clamp accepts any.
  dispatch_dtype((*a.in)[1].dtype, [&](auto tag) { clamp_typed<decltype(tag)>(a); });
}

void convert_n(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    if (src != dst && n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * itemsize(from));
    return;
  }
  if (is_complex(from) || is_complex(to)) return detail::convert(src, from, dst, to, n);
  dispatch_dtype(from, [&](auto f) {
    dispatch_dtype(to, [&](auto t) { convert_typed<decltype(t), decltype(f)>(src, dst, n); });
  });
}

void convert_element_type(const KernelArgs& a) {
  convert_n(a.in_ptr[0], (*a.in)[0].dtype, a.out_ptr[0], (*a.out)[0].dtype,
            numel((*a.in)[0].shape));
}

void to_float(const float16_t* src, float* dst, int64_t n) {
  const auto* h = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(h[i]);
}
void to_float(const bfloat16_t* src, float* dst, int64_t n) {
  const auto* h = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(h[i]);
}
void from_float(const float* src, float16_t* dst, int64_t n) {
  auto* h = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = float_to_half_bits(src[i]);
}
void from_float(const float* src, bfloat16_t* dst, int64_t n) {
  auto* h = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = float_to_bf16_bits(src[i]);
}

int64_t read_index(const void* p, DType t) {
  int64_t v = 0;
  convert_n(p, t, &v, DType::Int64, 1);
  return v;
}

void unsupported_dtype(const char* prim, DType got, const char* expected) {
  throw NotImplementedError(std::string("[") + prim + "] the CPU kernel does not support dtype " +
                            dtype_name(got) + ". Got " + dtype_name(got) + "; expected " +
                            expected + ". Convert the operand with astype first.");
}

}  // namespace tsr::detail::cpu
