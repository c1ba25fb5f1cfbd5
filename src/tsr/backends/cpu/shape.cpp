// Shape kernels. Every one is a strided copy: the output (or a box of it) is
// read from the input through per-dim element strides: permuted (transpose),
// zero (broadcast), scaled (slice), negative (rev) or offset (slices, pads,
// concatenation). copy_strided collapses dims and picks memcpy, fill, a 2-D
// tiled transpose or a strided loop for the inner dim.
//
// Local blocks: the partitioner leaves every dim an op resizes or reorders
// unsharded, so along it the local size is the global one and the parameters
// apply as they are; along other dims the op is the identity on the block.
#include <algorithm>
#include <cstring>
#include <vector>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/error.h"
#include "tsr/prims/shape_ops.h"

namespace tsr::detail::cpu {
namespace {

struct Dim {
  int64_t n, ds, ss;  // extent, destination and source element strides
};

// A vector with inline room for 8 entries: copy_strided runs once per gathered
// row, so its bookkeeping must not touch the heap for ordinary ranks.
template <typename T>
class SmallVec {
 public:
  void push_back(const T& v) {
    if (n_ < kInline) {
      inline_[n_] = v;
    } else {
      if (heap_.empty()) heap_.assign(inline_, inline_ + kInline);
      heap_.push_back(v);
    }
    ++n_;
  }
  void pop_back() {
    if (n_ > kInline) heap_.pop_back();
    if (--n_ == kInline) heap_.clear();
  }
  T* begin() { return n_ > kInline ? heap_.data() : inline_; }
  T* end() { return begin() + n_; }
  T& back() { return begin()[n_ - 1]; }
  T& operator[](int i) { return begin()[i]; }
  const T& operator[](int i) const { return const_cast<SmallVec*>(this)->begin()[i]; }
  bool empty() const { return n_ == 0; }
  int size() const { return n_; }
  void erase(T* it) {
    std::copy(it + 1, end(), it);
    pop_back();
  }

 private:
  static constexpr int kInline = 8;
  T inline_[kInline] = {};
  std::vector<T> heap_;  // all entries once there are more than kInline
  int n_ = 0;
};
using Dims = SmallVec<Dim>;

// Drops size-1 dims and merges each dim into its inner neighbour when both
// sides step over it contiguously. Result is outer to inner.
Dims collapse(const int64_t* ds, const int64_t* ss, const Shape& ext) {
  Dims m;
  for (int d = static_cast<int>(ext.size()) - 1; d >= 0; --d) {
    if (ext[d] == 1) continue;
    if (!m.empty() && ds[d] == m.back().ds * m.back().n && ss[d] == m.back().ss * m.back().n) {
      m.back().n *= ext[d];
    } else {
      m.push_back({ext[d], ds[d], ss[d]});
    }
  }
  std::reverse(m.begin(), m.end());
  return m;
}

// Calls body(dst_offset, src_offset) for every index of the `outer` dims.
template <typename F>
void for_each_outer(const Dims& outer, F&& body) {
  int nd = outer.size();
  SmallVec<int64_t> ctr;
  for (int d = 0; d < nd; ++d) ctr.push_back(0);
  int64_t od = 0, os = 0;
  for (;;) {
    body(od, os);
    int d = nd - 1;
    for (; d >= 0; --d) {
      od += outer[d].ds;
      os += outer[d].ss;
      if (++ctr[d] < outer[d].n) break;
      od -= outer[d].ds * outer[d].n;
      os -= outer[d].ss * outer[d].n;
      ctr[d] = 0;
    }
    if (d < 0) return;
  }
}

// d[i * dq + j] = s[i + j * sj] for i < nq, j < nj. Each tile is read a source
// row at a time into an L1 buffer and written a destination row at a time, so
// both sides use whole cache lines even for power-of-two strides.
template <typename U>
void transpose_tiles(U* d, const U* s, int64_t nq, int64_t dq, int64_t nj, int64_t sj) {
  constexpr int64_t kTile = sizeof(U) <= 4 ? 64 : 32;  // buffer <= 16 KiB
  alignas(64) U buf[kTile][kTile];
  for (int64_t j0 = 0; j0 < nj; j0 += kTile) {
    int64_t jn = std::min(kTile, nj - j0);
    for (int64_t i0 = 0; i0 < nq; i0 += kTile) {
      int64_t in = std::min(kTile, nq - i0);
#if defined(__SSE2__)
      if constexpr (sizeof(U) == 4) {
        if (jn == kTile && in == kTile) {
          // Whole 4-byte tiles go through 4x4 register transposes: ~2x faster than
          // the element loop below (a weight gradient's transpose is 4 MiB).
          for (int64_t j = 0; j < kTile; j += 4)
            for (int64_t i = 0; i < kTile; i += 4) {
              const auto* sp = reinterpret_cast<const float*>(s + (j0 + j) * sj + i0 + i);
              __m128 r0 = _mm_loadu_ps(sp), r1 = _mm_loadu_ps(sp + sj);
              __m128 r2 = _mm_loadu_ps(sp + 2 * sj), r3 = _mm_loadu_ps(sp + 3 * sj);
              _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
              _mm_store_ps(reinterpret_cast<float*>(&buf[i][j]), r0);
              _mm_store_ps(reinterpret_cast<float*>(&buf[i + 1][j]), r1);
              _mm_store_ps(reinterpret_cast<float*>(&buf[i + 2][j]), r2);
              _mm_store_ps(reinterpret_cast<float*>(&buf[i + 3][j]), r3);
            }
          for (int64_t i = 0; i < kTile; ++i)
            std::memcpy(d + (i0 + i) * dq + j0, buf[i], sizeof(U) * kTile);
          continue;
        }
      }
#endif
      for (int64_t j = 0; j < jn; ++j) {
        const U* sr = s + (j0 + j) * sj + i0;
        for (int64_t i = 0; i < in; ++i) buf[i][j] = sr[i];
      }
      for (int64_t i = 0; i < in; ++i) {
        U* dr = d + (i0 + i) * dq + j0;
        for (int64_t j = 0; j < jn; ++j) dr[j] = buf[i][j];
      }
    }
  }
}

template <typename U>
void copy_typed(U* dst, const U* src, Dims& dims, int threads) {
  if (dims.empty()) {
    *dst = *src;
    return;
  }
  Dim in = dims.back();
  dims.pop_back();
  if (in.ds == 1 && in.ss != 0 && in.ss != 1) {
    // Transposing: the source is contiguous along some outer dim q.
    auto q = std::find_if(dims.begin(), dims.end(), [](const Dim& x) { return x.ss == 1; });
    if (q != dims.end()) {
      Dim dq = *q;
      dims.erase(q);
      if (dims.empty()) {
        // A plain 2-D transpose (a weight gradient's): split the destination columns
        // between threads, in whole tiles.
        int t = dq.n * in.n >= kParallelMin ? threads : 1;
        parallel_ranges(in.n, t, 128, 64, [&](int64_t j0, int64_t j1) {
          transpose_tiles(dst + j0, src + j0 * in.ss, dq.n, dq.ds, j1 - j0, in.ss);
        });
        return;
      }
      for_each_outer(dims, [&](int64_t od, int64_t os) {
        transpose_tiles(dst + od, src + os, dq.n, dq.ds, in.n, in.ss);
      });
      return;
    }
  }
  // The odometer walks all but the last two dims; the dim before the inner
  // run is a plain loop, so short runs (a broadcast of a few trailing
  // elements) do not pay the odometer per run.
  Dim mid{1, 0, 0};
  if (!dims.empty()) {
    mid = dims.back();
    dims.pop_back();
  }
  auto each = [&](auto&& run) {
    for_each_outer(dims, [&](int64_t od, int64_t os) {
      for (int64_t k = 0; k < mid.n; ++k) run(dst + od + k * mid.ds, src + os + k * mid.ss);
    });
  };
  const int64_t n = in.n, ds = in.ds, ss = in.ss;
  if (ds == 1 && ss == 1) {
    each([&](U* d, const U* s) { std::memcpy(d, s, sizeof(U) * n); });
  } else if (ds == 1 && ss == 0) {
    each([&](U* d, const U* s) { std::fill_n(d, n, *s); });
  } else if (ds == 1) {
    each([&](U* d, const U* s) {
      for (int64_t j = 0; j < n; ++j) d[j] = s[j * ss];
    });
  } else {
    each([&](U* d, const U* s) {
      for (int64_t j = 0; j < n; ++j) d[j * ds] = s[j * ss];
    });
  }
}

const Shape& in_shape(const KernelArgs& a, int k) { return (*a.in)[k].shape; }
const Shape& out_shape(const KernelArgs& a, int k) { return (*a.out)[k].shape; }
size_t elem_size(const KernelArgs& a) { return itemsize((*a.out)[0].dtype); }

// Byte pointer helpers for offsets in elements.
const char* at(const void* p, int64_t off, size_t isz) {
  return static_cast<const char*>(p) + off * static_cast<int64_t>(isz);
}
char* at(void* p, int64_t off, size_t isz) {
  return static_cast<char*>(p) + off * static_cast<int64_t>(isz);
}

// Copies the whole `src` block (row-major, shape ext) into dst at offset `doff`
// of an array with strides `ds`.
void copy_block_into(void* dst, const std::vector<int64_t>& ds, int64_t doff, const void* src,
                     const Shape& ext, size_t isz) {
  std::vector<int64_t> ss = row_major_strides(ext);
  copy_strided(at(dst, doff, isz), ds.data(), src, ss.data(), ext, isz);
}

// Clamped dynamic start per dim; a dim the update/slice covers whole is the
// identity (possibly sharded, so its start does not apply locally).
std::vector<int64_t> dynamic_starts(const KernelArgs& a, int first, const Shape& big,
                                    const Shape& small) {
  std::vector<int64_t> st(big.size(), 0);
  for (size_t d = 0; d < big.size(); ++d) {
    if (small[d] == big[d]) continue;
    int64_t s = read_index(a.in_ptr[first + d], (*a.in)[first + d].dtype);
    st[d] = std::clamp<int64_t>(s, 0, big[d] - small[d]);
  }
  return st;
}

}  // namespace

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t p = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    s[d] = p;
    p *= shape[d];
  }
  return s;
}

void copy_strided(void* dst, const int64_t* dst_strides, const void* src,
                  const int64_t* src_strides, const Shape& extent, size_t itemsize, int threads) {
  for (int64_t e : extent)
    if (e == 0) return;
  Dims dims = collapse(dst_strides, src_strides, extent);
  switch (itemsize) {
    case 1:
      return copy_typed(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), dims,
                        threads);
    case 2:
      return copy_typed(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), dims,
                        threads);
    case 4:
      return copy_typed(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), dims,
                        threads);
    case 8:
      return copy_typed(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), dims,
                        threads);
    default:  // complex128
      return copy_typed(static_cast<Bytes16*>(dst), static_cast<const Bytes16*>(src), dims,
                        threads);
  }
}

namespace {
template <typename T>
void fill_as(void* dst, const void* value, int64_t n) {
  T v;
  std::memcpy(&v, value, sizeof(T));
  std::fill_n(static_cast<T*>(dst), n, v);
}
}  // namespace

void fill_value(void* dst, const void* value, int64_t n, size_t itemsize) {
  // A plain loop per item size (no shape to build: creation ops run once per call).
  switch (itemsize) {
    case 1:
      return fill_as<uint8_t>(dst, value, n);
    case 2:
      return fill_as<uint16_t>(dst, value, n);
    case 4:
      return fill_as<uint32_t>(dst, value, n);
    case 8:
      return fill_as<uint64_t>(dst, value, n);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(i) * itemsize, value, itemsize);
  }
}

void copy_input(const KernelArgs& a) {
  int64_t bytes = std::min<int64_t>(numel(in_shape(a, 0)) * itemsize((*a.in)[0].dtype),
                                    numel(out_shape(a, 0)) * itemsize((*a.out)[0].dtype));
  if (a.in_ptr[0] != a.out_ptr[0] && bytes > 0) std::memcpy(a.out_ptr[0], a.in_ptr[0], bytes);
}

void transpose(const KernelArgs& a) {
  const auto& perm = static_cast<const prim::Transpose&>(*a.prim).perm();
  StridedRead r = transpose_read(in_shape(a, 0), perm);
  std::vector<int64_t> ds = row_major_strides(r.extent);
  copy_strided(a.out_ptr[0], ds.data(), a.in_ptr[0], r.strides.data(), r.extent, elem_size(a),
               kernel_threads(a.busy_devices));
}

void broadcast_in_dim(const KernelArgs& a) {
  const auto& bdims = static_cast<const prim::BroadcastInDim&>(*a.prim).bdims();
  StridedRead r = broadcast_read(in_shape(a, 0), out_shape(a, 0), bdims);
  std::vector<int64_t> ds = row_major_strides(r.extent);
  copy_strided(a.out_ptr[0], ds.data(), a.in_ptr[0], r.strides.data(), r.extent, elem_size(a));
}

void slice(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Slice&>(*a.prim);
  StridedRead r = slice_read(in_shape(a, 0), out_shape(a, 0), p.start(), p.strides());
  size_t isz = elem_size(a);
  std::vector<int64_t> ds = row_major_strides(r.extent);
  copy_strided(a.out_ptr[0], ds.data(), at(a.in_ptr[0], r.offset, isz), r.strides.data(), r.extent,
               isz);
}

void dynamic_slice(const KernelArgs& a) {
  const Shape& s = in_shape(a, 0);
  const Shape& os = out_shape(a, 0);
  std::vector<int64_t> st = dynamic_starts(a, 1, s, os);
  std::vector<int64_t> ss = row_major_strides(s), ds = row_major_strides(os);
  int64_t off = 0;
  for (size_t d = 0; d < s.size(); ++d) off += st[d] * ss[d];
  size_t isz = elem_size(a);
  copy_strided(a.out_ptr[0], ds.data(), at(a.in_ptr[0], off, isz), ss.data(), os, isz);
}

void dynamic_update_slice(const KernelArgs& a) {
  const Shape& os = out_shape(a, 0);
  const Shape& us = in_shape(a, 1);
  size_t isz = elem_size(a);
  if (a.in_ptr[0] != a.out_ptr[0] && numel(os) > 0)
    std::memcpy(a.out_ptr[0], a.in_ptr[0], numel(os) * isz);
  std::vector<int64_t> st = dynamic_starts(a, 2, os, us);
  std::vector<int64_t> ds = row_major_strides(os);
  int64_t off = 0;
  for (size_t d = 0; d < os.size(); ++d) off += st[d] * ds[d];
  copy_block_into(a.out_ptr[0], ds, off, a.in_ptr[1], us, isz);
}

void pad(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Pad&>(*a.prim);
  const Shape& os = out_shape(a, 0);
  size_t isz = elem_size(a);
  fill_value(a.out_ptr[0], a.in_ptr[1], numel(os), isz);
  StridedCopy c = pad_copy(in_shape(a, 0), os, p.lo(), p.interior());
  if (numel(c.extent) == 0) return;
  copy_strided(at(a.out_ptr[0], c.dst_offset, isz), c.dst_strides.data(),
               at(a.in_ptr[0], c.src_offset, isz), c.src_strides.data(), c.extent, isz);
}

void concatenate(const KernelArgs& a) {
  int dim = static_cast<const prim::Concatenate&>(*a.prim).dim();
  std::vector<int64_t> ds = row_major_strides(out_shape(a, 0));
  size_t isz = elem_size(a);
  int64_t pos = 0;
  for (size_t k = 0; k < a.in->size(); ++k) {
    copy_block_into(a.out_ptr[0], ds, pos * ds[dim], a.in_ptr[k], in_shape(a, k), isz);
    pos += in_shape(a, k)[dim];
  }
}

void split(const KernelArgs& a) {
  int axis = static_cast<const prim::Split&>(*a.prim).axis();
  std::vector<int64_t> ss = row_major_strides(in_shape(a, 0));
  size_t isz = elem_size(a);
  int64_t pos = 0;
  for (size_t k = 0; k < a.out->size(); ++k) {
    const Shape& os = out_shape(a, k);
    std::vector<int64_t> ds = row_major_strides(os);
    copy_strided(a.out_ptr[k], ds.data(), at(a.in_ptr[0], pos * ss[axis], isz), ss.data(), os, isz);
    pos += os[axis];
  }
}

void rev(const KernelArgs& a) {
  const auto& dims = static_cast<const prim::Rev&>(*a.prim).dims();
  const Shape& s = in_shape(a, 0);
  if (numel(s) == 0) return;
  StridedRead r = rev_read(s, dims);
  size_t isz = elem_size(a);
  std::vector<int64_t> ds = row_major_strides(s);
  copy_strided(a.out_ptr[0], ds.data(), at(a.in_ptr[0], r.offset, isz), r.strides.data(), s, isz);
}

}  // namespace tsr::detail::cpu
