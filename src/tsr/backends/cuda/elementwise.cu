// CUDA elementwise kernels and their launchers (launch.h): unary, binary with
// broadcasting, integer_pow, convert_element_type, select_n, clamp. Every element is computed by
// the scalar functions the CPU kernels call (backends/common/elementwise_apply.h), so the two
// platforms agree bit for bit wherever the math library does.
#include <array>
#include <utility>

#include "tsr/backends/common/elementwise_apply.h"
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

using prim::BinaryOp;
using prim::UnaryOp;

template <typename S>
inline constexpr bool kHalf = __is_same(S, float16_t) || __is_same(S, bfloat16_t);

// ---- unary

template <UnaryOp Op, typename S, typename O>
__global__ void unary_k(const S* x, O* y, int64_t n) {
  TSR_CUDA_FOR(i, n) { y[i] = store<O>(unary_apply<Op>(load(x[i]))); }
}

struct UnaryCall {
  const void* x;
  void* y;
  int64_t n;
  cudaStream_t s;
};
using UnaryFn = void (*)(const UnaryCall&);

template <UnaryOp Op, typename S>
void unary_run(const UnaryCall& c) {
  using C = Compute<S>;
  if constexpr (!unary_accepts<Op, C>()) {
    unsupported("unary", dtype_v<S>);
  } else {
    using O = typename UnaryResult<Op, S>::type;  // bool for is_finite, else S
    Launch l = launch_1d(c.n);
    unary_k<Op, S, O>
        <<<l.blocks, l.threads, 0, c.s>>>(static_cast<const S*>(c.x), static_cast<O*>(c.y), c.n);
  }
}

template <typename S, size_t... I>
constexpr std::array<UnaryFn, sizeof...(I)> unary_table(std::index_sequence<I...>) {
  return {&unary_run<static_cast<UnaryOp>(I), S>...};
}

// ---- binary

// Same-shape operands (or a scalar: step 0): one flat index; otherwise strides per
// operand. (A step, not a template flag, keeps the kernel count down: the loop is
// memory-bound either way.)
template <BinaryOp Op, typename S, typename O>
__global__ void binary_flat_k(const S* x, int64_t xs, const S* y, int64_t ys, O* z, int64_t n) {
  TSR_CUDA_FOR(i, n) { z[i] = store<O>(binary_apply<Op>(load(x[i * xs]), load(y[i * ys]))); }
}
template <BinaryOp Op, typename S, typename O>
__global__ void binary_strided_k(const S* x, const S* y, O* z, int64_t n, Strides st) {
  TSR_CUDA_FOR(i, n) {
    z[i] = store<O>(binary_apply<Op>(load(x[offset_of(st, 0, i)]), load(y[offset_of(st, 1, i)])));
  }
}

struct BinaryCall {
  const void *x, *y;
  void* z;
  int64_t n;
  const Strides* st;
  bool av, bv;
  cudaStream_t s;
};
using BinaryFn = void (*)(const BinaryCall&);

template <BinaryOp Op, typename S>
void binary_run(const BinaryCall& c) {
  using C = Compute<S>;
  if constexpr (!binary_accepts<Op, C>()) {
    unsupported("binary", dtype_v<S>);
  } else {
    using O = typename BinaryResult<Op, S>::type;
    Launch l = launch_1d(c.n);
    const S* x = static_cast<const S*>(c.x);
    const S* y = static_cast<const S*>(c.y);
    O* z = static_cast<O*>(c.z);
    if (c.st) {
      binary_strided_k<Op, S, O><<<l.blocks, l.threads, 0, c.s>>>(x, y, z, c.n, *c.st);
    } else {
      binary_flat_k<Op, S, O>
          <<<l.blocks, l.threads, 0, c.s>>>(x, c.av ? 1 : 0, y, c.bv ? 1 : 0, z, c.n);
    }
  }
}

template <typename S, size_t... I>
constexpr std::array<BinaryFn, sizeof...(I)> binary_table(std::index_sequence<I...>) {
  return {&binary_run<static_cast<BinaryOp>(I), S>...};
}

// ---- integer_pow, convert, select_n, clamp

template <typename S>
__global__ void integer_pow_k(const S* x, S* y, int64_t n, int p) {
  TSR_CUDA_FOR(i, n) { y[i] = store<S>(ops::integer_pow(load(x[i]), p)); }
}

// As the CPU's convert_typed: the half types go through float, and sources wider than
// float's mantissa reach them rounded to odd first (one correct rounding).
template <typename To, typename From>
__device__ __forceinline__ To convert_one(From v) {
  if constexpr (kHalf<From> || kHalf<To>) {
    float f;
    if constexpr (kHalf<From>) {
      f = load(v);
    } else if constexpr (__is_same(From, double) || __is_same(From, int32_t) ||
                         __is_same(From, uint32_t) || __is_same(From, int64_t) ||
                         __is_same(From, uint64_t)) {
      f = round_to_odd_float(static_cast<double>(v));
    } else {
      f = ops::cast<float>(v);
    }
    if constexpr (kHalf<To>) {
      return store<To>(f);
    } else {
      return ops::cast<To>(f);
    }
  } else {
    return ops::cast<To>(v);
  }
}

template <typename To, typename From>
__global__ void convert_k(const From* x, To* y, int64_t n) {
  TSR_CUDA_FOR(i, n) { y[i] = convert_one<To>(x[i]); }
}

// select_n moves bytes: typed by item size; `which` is clamped to the cases, as the
// CPU kernel does.
struct Cases {
  const void* p[kMaxSelectCases];
};
// One launch per group of kMaxSelectCases cases: an element whose case is in
// [base, base + group) is written by that launch.
template <typename U, typename W>
__global__ void select_k(const W* which, bool which_scalar, Cases cases, int base, int group,
                         int ncases, U* out, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t k = static_cast<int64_t>(which[which_scalar ? 0 : i]);
    k = k < 0 ? 0 : (k >= ncases ? ncases - 1 : k);
    if (k >= base && k < base + group) out[i] = static_cast<const U*>(cases.p[k - base])[i];
  }
}

template <typename S>
__global__ void clamp_k(const S* lo, bool lo_arr, const S* x, const S* hi, bool hi_arr, S* out,
                        int64_t n) {
  TSR_CUDA_FOR(i, n) {
    auto l = load(lo[lo_arr ? i : 0]), v = load(x[i]), h = load(hi[hi_arr ? i : 0]);
    auto m = (v > l || v != v) ? v : l;  // NaN propagates, as lax.max / lax.min
    out[i] = store<S>((m < h || m != m) ? m : h);
  }
}

}  // namespace

void unary_launch(UnaryOp op, DType t, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  dispatch_real(t, "unary", [&](auto tag) {
    using S = decltype(tag);
    static constexpr auto table = unary_table<S>(std::make_index_sequence<prim::kNumUnaryOps>{});
    table[static_cast<size_t>(op)](UnaryCall{x, y, n, s});
  });
  check(cudaGetLastError(), "unary", "kernel launch");
}

void binary_launch(BinaryOp op, DType t, const void* x, const void* y, void* z, int64_t n,
                   const Strides* st, bool av, bool bv, cudaStream_t s) {
  if (n == 0) return;
  dispatch_real(t, "binary", [&](auto tag) {
    using S = decltype(tag);
    static constexpr auto table = binary_table<S>(std::make_index_sequence<prim::kNumBinaryOps>{});
    table[static_cast<size_t>(op)](BinaryCall{x, y, z, n, st, av, bv, s});
  });
  check(cudaGetLastError(), "binary", "kernel launch");
}

void integer_pow_launch(DType t, const void* x, void* y, int64_t n, int p, cudaStream_t s) {
  if (n == 0) return;
  dispatch_real(t, "integer_pow", [&](auto tag) {
    using S = decltype(tag);
    if constexpr (__is_same(S, bool)) {
      unsupported("integer_pow", DType::Bool);
    } else {
      Launch l = launch_1d(n);
      integer_pow_k<S>
          <<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(x), static_cast<S*>(y), n, p);
    }
  });
  check(cudaGetLastError(), "integer_pow", "kernel launch");
}

void convert_launch(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(from, "convert_element_type", [&](auto f) {
    dispatch_real(to, "convert_element_type", [&](auto t) {
      using From = decltype(f);
      using To = decltype(t);
      convert_k<To, From>
          <<<l.blocks, l.threads, 0, s>>>(static_cast<const From*>(x), static_cast<To*>(y), n);
    });
  });
  check(cudaGetLastError(), "convert_element_type", "kernel launch");
}

void select_launch(DType which_t, size_t item, const void* which, bool which_scalar,
                   const void* const* cases, int ncases, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  auto run = [&](auto utag) {
    using U = decltype(utag);
    dispatch_real(which_t, "select_n", [&](auto wtag) {
      using W = decltype(wtag);
      if constexpr (!kHalf<W> && !__is_same(W, float) && !__is_same(W, double)) {
        for (int base = 0; base < ncases; base += kMaxSelectCases) {
          int group = ncases - base < kMaxSelectCases ? ncases - base : kMaxSelectCases;
          Cases cs{};
          for (int k = 0; k < group; ++k) cs.p[k] = cases[base + k];
          select_k<U, W><<<l.blocks, l.threads, 0, s>>>(static_cast<const W*>(which), which_scalar,
                                                        cs, base, group, ncases,
                                                        static_cast<U*>(out), n);
        }
      } else {
        unsupported("select_n", which_t);
      }
    });
  };
  switch (item) {
    case 1:
      run(uint8_t{});
      break;
    case 2:
      run(uint16_t{});
      break;
    case 4:
      run(uint32_t{});
      break;
    case 8:
      run(uint64_t{});
      break;
    default:
      run(Item16{});
  }
  check(cudaGetLastError(), "select_n", "kernel launch");
}

void clamp_launch(DType t, const void* lo, bool lo_arr, const void* x, const void* hi, bool hi_arr,
                  void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "clamp", [&](auto tag) {
    using S = decltype(tag);
    clamp_k<S><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(lo), lo_arr,
                                              static_cast<const S*>(x), static_cast<const S*>(hi),
                                              hi_arr, static_cast<S*>(out), n);
  });
  check(cudaGetLastError(), "clamp", "kernel launch");
}

}  // namespace tsr::detail::cuda
