// CUDA sort, top_k and searchsorted and their launchers (launch.h). The order is the
// CPU kernels' (backends/common/sort_ops.h): each key becomes the unsigned integer
// sort_key_bits gives (same order, NaN last, -0.0 equal to 0.0), and CUB's stable
// segmented sort orders every line's positions by it, from the last key to the first
// (so the first key decides, later keys break its ties, and full ties keep their
// order). A stable sort is also a valid unstable one: the CPU's std::sort may order
// full ties differently, which only shows in the non-key operands.
#include <cub/device/device_segmented_sort.cuh>
#include <utility>

#include "tsr/backends/common/sort_ops.h"
#include "tsr/backends/cuda/element.cuh"

namespace tsr::detail::cuda {
namespace {

// Element (line l, position j) of an [no, n, ni] array, lines numbered o * ni + i.
__device__ __forceinline__ int64_t line_offset(int64_t l, int64_t j, int64_t n, int64_t ni) {
  int64_t o = l / ni;
  return (o * n + j) * ni + (l - o * ni);
}

__global__ void iota_lines_k(int64_t* perm, int64_t n, int64_t total) {
  TSR_CUDA_FOR(i, total) { perm[i] = i % n; }
}

__global__ void segment_offsets_k(int64_t* off, int64_t n, int64_t lines) {
  TSR_CUDA_FOR(l, lines + 1) { off[l] = l * n; }
}

// keys[l * n + j] = the key of line l's element perm[l * n + j] (descending: inverted).
template <typename S>
__global__ void line_keys_k(const S* x, const int64_t* perm, uint64_t* keys, int64_t n, int64_t ni,
                            int64_t total, bool descending) {
  TSR_CUDA_FOR(i, total) {
    int64_t l = i / n;
    uint64_t k = sort_key_bits(load(x[line_offset(l, perm[i], n, ni)]));
    keys[i] = descending ? ~k : k;
  }
}

// out[line l, j] = in[line l, perm[l * n + j]].
template <typename U>
__global__ void permute_lines_k(const U* in, const int64_t* perm, U* out, int64_t n, int64_t ni,
                                int64_t total) {
  TSR_CUDA_FOR(i, total) {
    int64_t l = i / n, j = i - l * n;
    out[line_offset(l, j, n, ni)] = in[line_offset(l, perm[i], n, ni)];
  }
}

// top_k's outputs: row o's first k positions.
template <typename S>
__global__ void top_k_take_k(const S* x, const int64_t* perm, S* vals, int32_t* idx, int64_t n,
                             int64_t k, int64_t total) {
  TSR_CUDA_FOR(i, total) {
    int64_t o = i / k, j = i - o * k;
    int64_t p = perm[o * n + j];
    vals[i] = x[o * n + p];
    idx[i] = static_cast<int32_t>(p);
  }
}

template <typename S>
__global__ void searchsorted_k(const S* sorted, int64_t n, const S* v, int64_t m, bool right,
                               int32_t* out) {
  TSR_CUDA_FOR(q, m) {
    auto at = [sorted](int64_t i) { return load(sorted[i]); };
    out[q] = static_cast<int32_t>(sorted_position(at, n, load(v[q]), right));
  }
}

// Line positions ordered by keys: `perm` (lines x n, starting as each line's order)
// is stably sorted by the key of each call to by(); the buffers live
// until the object goes.
class LineSorter {
 public:
  LineSorter(int64_t lines, int64_t n, cudaStream_t s, const char* op)
      : lines_(lines),
        n_(n),
        total_(lines * n),
        s_(s),
        op_(op),
        keys_(s, op),
        keys_out_(s, op),
        perm_(s, op),
        perm_out_(s, op),
        offsets_(s, op),
        temp_(s, op) {
    keys_.alloc(static_cast<size_t>(total_) * sizeof(uint64_t));
    keys_out_.alloc(static_cast<size_t>(total_) * sizeof(uint64_t));
    perm_.alloc(static_cast<size_t>(total_) * sizeof(int64_t));
    perm_out_.alloc(static_cast<size_t>(total_) * sizeof(int64_t));
    offsets_.alloc(static_cast<size_t>(lines_ + 1) * sizeof(int64_t));
    Launch l = launch_1d(total_);
    iota_lines_k<<<l.blocks, l.threads, 0, s_>>>(perm(), n_, total_);
    Launch lo = launch_1d(lines_ + 1);
    segment_offsets_k<<<lo.blocks, lo.threads, 0, s_>>>(offsets(), n_, lines_);
    size_t bytes = 0;
    check(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys(), keys_out(), perm(),
                                                    perm_out(), total_, lines_, offsets(),
                                                    offsets() + 1, s_),
          op_, "cub::DeviceSegmentedSort (size query)");
    temp_bytes_ = bytes ? bytes : 16;  // a null buffer would be another size query
    temp_.alloc(temp_bytes_);
  }

  /** Stably sorts every line's positions by the key of x (dtype t), viewed as
   *  [no, n, ni] with lines o * ni + i. */
  void by(DType t, const void* x, int64_t ni, bool descending) {
    Launch l = launch_1d(total_);
    dispatch_real(t, op_, [&](auto tag) {
      using S = decltype(tag);
      line_keys_k<S><<<l.blocks, l.threads, 0, s_>>>(static_cast<const S*>(x), perm(), keys(), n_,
                                                     ni, total_, descending);
    });
    check(cub::DeviceSegmentedSort::StableSortPairs(temp_.p, temp_bytes_, keys(), keys_out(),
                                                    perm(), perm_out(), total_, lines_, offsets(),
                                                    offsets() + 1, s_),
          op_, "cub::DeviceSegmentedSort");
    std::swap(perm_.p, perm_out_.p);
  }

  /** The sorted positions, lines x n. */
  const int64_t* result() { return perm(); }

 private:
  int64_t* perm() { return static_cast<int64_t*>(perm_.p); }
  int64_t* perm_out() { return static_cast<int64_t*>(perm_out_.p); }
  uint64_t* keys() { return static_cast<uint64_t*>(keys_.p); }
  uint64_t* keys_out() { return static_cast<uint64_t*>(keys_out_.p); }
  int64_t* offsets() { return static_cast<int64_t*>(offsets_.p); }

  int64_t lines_, n_, total_;
  cudaStream_t s_;
  const char* op_;
  Scratch keys_, keys_out_, perm_, perm_out_, offsets_, temp_;
  size_t temp_bytes_ = 0;
};

}  // namespace

void sort_launch(int nops, int num_keys, const DType* dtypes, const void* const* in,
                 void* const* out, int64_t no, int64_t n, int64_t ni, cudaStream_t s) {
  const int64_t total = no * n * ni;
  if (total == 0) return;
  LineSorter sorter(no * ni, n, s, "sort");
  for (int k = num_keys - 1; k >= 0; --k) sorter.by(dtypes[k], in[k], ni, false);
  Launch l = launch_1d(total);
  for (int k = 0; k < nops; ++k)
    by_item_size(itemsize(dtypes[k]), [&](auto tag) {
      using U = decltype(tag);
      permute_lines_k<U><<<l.blocks, l.threads, 0, s>>>(
          static_cast<const U*>(in[k]), sorter.result(), static_cast<U*>(out[k]), n, ni, total);
    });
  check(cudaGetLastError(), "sort", "kernel launch");
}

void top_k_launch(DType t, const void* x, void* vals, int32_t* idx, int64_t no, int64_t n,
                  int64_t k, cudaStream_t s) {
  if (no == 0 || k == 0) return;
  LineSorter sorter(no, n, s, "top_k");
  sorter.by(t, x, 1, true);  // larger first; ties keep the lower index first
  Launch l = launch_1d(no * k);
  dispatch_real(t, "top_k", [&](auto tag) {
    using S = decltype(tag);
    top_k_take_k<S><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(x), sorter.result(),
                                                   static_cast<S*>(vals), idx, n, k, no * k);
  });
  check(cudaGetLastError(), "top_k", "kernel launch");
}

void searchsorted_launch(DType t, const void* sorted, int64_t n, const void* v, int64_t m,
                         bool right, int32_t* out, cudaStream_t s) {
  if (m == 0) return;
  Launch l = launch_1d(m);
  dispatch_real(t, "searchsorted", [&](auto tag) {
    using S = decltype(tag);
    searchsorted_k<S><<<l.blocks, l.threads, 0, s>>>(static_cast<const S*>(sorted), n,
                                                     static_cast<const S*>(v), m, right, out);
  });
  check(cudaGetLastError(), "searchsorted", "kernel launch");
}

}  // namespace tsr::detail::cuda
