// CUDA shape and creation kernels and their launchers (launch.h): the strided read
// every copy-like shape op becomes (the plans are shared with the CPU:
// backends/common/strided_plans.h), a fill, and iota.
#include <cstring>

#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

template <typename U>
__global__ void strided_read_k(U* out, const U* src, Strides p, int64_t n) {
  TSR_CUDA_FOR(i, n) { out[i] = src[offset_of(p, 0, i)]; }
}

template <typename U>
__global__ void strided_copy_k(U* dst, const U* src, Strides p, int64_t n) {
  TSR_CUDA_FOR(i, n) { dst[offset_of(p, 1, i)] = src[offset_of(p, 0, i)]; }
}

template <typename U>
__global__ void fill_from_k(U* out, const U* v, int64_t n) {
  TSR_CUDA_FOR(i, n) { out[i] = *v; }
}

template <typename U>
__global__ void fill_k(U* out, U v, int64_t n) {
  TSR_CUDA_FOR(i, n) { out[i] = v; }
}

// value = base + sum_k index_k * w[k], made as int64 and converted as the CPU does.
template <typename S>
__global__ void iota_k(S* out, Strides p, int64_t base, int64_t n) {
  TSR_CUDA_FOR(i, n) {
    int64_t v = base + offset_of(p, 0, i);
    if constexpr (__is_same(S, float16_t) || __is_same(S, bfloat16_t)) {
      out[i] = store<S>(round_to_odd_float(static_cast<double>(v)));
    } else {
      out[i] = ops::cast<S>(v);
    }
  }
}

// An index scalar of any integer dtype (or bool) as int64, on the device.
__device__ int64_t read_index(const void* p, DType t) {
  switch (t) {
    case DType::Bool:
      return *static_cast<const bool*>(p) ? 1 : 0;
    case DType::Int8:
      return *static_cast<const int8_t*>(p);
    case DType::Int16:
      return *static_cast<const int16_t*>(p);
    case DType::Int32:
      return *static_cast<const int32_t*>(p);
    case DType::UInt8:
      return *static_cast<const uint8_t*>(p);
    case DType::UInt16:
      return *static_cast<const uint16_t*>(p);
    case DType::UInt32:
      return *static_cast<const uint32_t*>(p);
    case DType::UInt64: {
      uint64_t v = *static_cast<const uint64_t*>(p);
      return v > 0x7fffffffffffffffull ? 0x7fffffffffffffffll : static_cast<int64_t>(v);
    }
    default:
      return *static_cast<const int64_t*>(p);
  }
}

// dynamic_slice (Update false): out[i] = src[(idx + start) . in0]; dynamic_update_slice's
// write (Update true): dst[(idx + start) . in1] = src[idx . in0].
template <typename U, bool Update>
__global__ void dynamic_copy_k(const U* src, U* dst, Strides p, DynamicStarts st, int64_t n) {
  int64_t start[kMaxDims];
  for (int d = 0; d < st.rank; ++d) {
    int64_t v = st.index[d] ? read_index(st.index[d], st.dtype[d]) : 0;
    start[d] = v < 0 ? 0 : (v > st.max_start[d] ? st.max_start[d] : v);
  }
  TSR_CUDA_FOR(i, n) {
    int64_t j = i, moved = 0, plain = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t q = j / p.size[d], idx = j - q * p.size[d];
      moved += (idx + start[d]) * p.in[Update ? 1 : 0][d];
      plain += idx * p.in[Update ? 0 : 1][d];
      j = q;
    }
    if constexpr (Update) {
      dst[moved] = src[plain];
    } else {
      dst[plain] = src[moved];
    }
  }
}

}  // namespace

void strided_read_launch(size_t item, const void* src, const Strides& st, void* out, int64_t n,
                         cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    strided_read_k<U>
        <<<l.blocks, l.threads, 0, s>>>(static_cast<U*>(out), static_cast<const U*>(src), st, n);
  });
  check(cudaGetLastError(), "copy", "strided read launch");
}

void strided_copy_launch(size_t item, void* dst, const void* src, const Strides& st, int64_t n,
                         cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    strided_copy_k<U>
        <<<l.blocks, l.threads, 0, s>>>(static_cast<U*>(dst), static_cast<const U*>(src), st, n);
  });
  check(cudaGetLastError(), "copy", "strided copy launch");
}

void dynamic_copy_launch(size_t item, bool update, const void* src, void* dst, const Strides& st,
                         const DynamicStarts& starts, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    const U* x = static_cast<const U*>(src);
    U* y = static_cast<U*>(dst);
    if (update)
      dynamic_copy_k<U, true><<<l.blocks, l.threads, 0, s>>>(x, y, st, starts, n);
    else
      dynamic_copy_k<U, false><<<l.blocks, l.threads, 0, s>>>(x, y, st, starts, n);
  });
  check(cudaGetLastError(), update ? "dynamic_update_slice" : "dynamic_slice", "kernel launch");
}

void fill_from_launch(size_t item, const void* value, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    fill_from_k<U>
        <<<l.blocks, l.threads, 0, s>>>(static_cast<U*>(out), static_cast<const U*>(value), n);
  });
  check(cudaGetLastError(), "pad", "fill launch");
}

void fill_launch(size_t item, const void* value, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  by_item_size(item, [&](auto tag) {
    using U = decltype(tag);
    U v;
    std::memcpy(&v, value, sizeof(U));
    fill_k<U><<<l.blocks, l.threads, 0, s>>>(static_cast<U*>(out), v, n);
  });
  check(cudaGetLastError(), "full", "fill launch");
}

void iota_launch(DType t, const Strides& st, int64_t base, void* out, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  Launch l = launch_1d(n);
  dispatch_real(t, "iota", [&](auto tag) {
    using S = decltype(tag);
    iota_k<S><<<l.blocks, l.threads, 0, s>>>(static_cast<S*>(out), st, base, n);
  });
  check(cudaGetLastError(), "iota", "kernel launch");
}

}  // namespace tsr::detail::cuda
