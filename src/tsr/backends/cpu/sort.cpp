// sort, top_k and searchsorted on local blocks. Floats compare as JAX's sort
// comparator: NaN after every number, -0.0 equal to 0.0 (backends/common/sort_ops.h,
// shared with the CUDA kernels). Lines along the sorted axis are viewed as
// [outer, n, inner].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <type_traits>
#include <vector>

#include "tsr/backends/common/sort_ops.h"
#include "tsr/backends/cpu/cpu_kernels.h"
#include "tsr/prims/sort.h"

namespace tsr::detail::cpu {
namespace {

// The value a comparison sees: float for the half types.
template <typename T>
inline auto key(T v) {
  if constexpr (kIsHalf<T>) {
    return to_float(v);
  } else {
    return v;
  }
}

// -1, 0, 1 comparing elements i and j of one operand.
using Cmp = std::function<int(int64_t, int64_t)>;

Cmp make_cmp(const void* p, DType dt) {
  return dispatch_dtype(dt, [&](auto tag) -> Cmp {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(p);
    return [x](int64_t i, int64_t j) {
      auto a = key(x[i]), b = key(x[j]);
      return sort_less(a, b) ? -1 : sort_less(b, a) ? 1 : 0;
    };
  });
}

void line_extent(const Shape& s, int axis, int64_t& no, int64_t& n, int64_t& ni) {
  no = 1;
  ni = 1;
  for (int d = 0; d < axis; ++d) no *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) ni *= s[d];
  n = s[axis];
}

}  // namespace

void sort(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Sort&>(*a.prim);
  const auto& in = *a.in;
  int64_t no, n, ni;
  line_extent(in[0].shape, p.dimension(), no, n, ni);
  std::vector<Cmp> keys;
  for (int k = 0; k < p.num_keys(); ++k) keys.push_back(make_cmp(a.in_ptr[k], in[k].dtype));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t o = 0; o < no; ++o)
    for (int64_t i = 0; i < ni; ++i) {
      int64_t base = o * n * ni + i;
      std::iota(perm.begin(), perm.end(), int64_t{0});
      auto lt = [&](int64_t x, int64_t y) {
        for (const auto& c : keys) {
          int r = c(base + x * ni, base + y * ni);
          if (r != 0) return r < 0;
        }
        return false;
      };
      if (p.is_stable())
        std::stable_sort(perm.begin(), perm.end(), lt);
      else
        std::sort(perm.begin(), perm.end(), lt);
      for (size_t k = 0; k < in.size(); ++k) {
        size_t isz = itemsize(in[k].dtype);
        const char* src = static_cast<const char*>(a.in_ptr[k]);
        char* dst = static_cast<char*>(a.out_ptr[k]);
        for (int64_t j = 0; j < n; ++j)
          std::memcpy(dst + (base + j * ni) * isz, src + (base + perm[j] * ni) * isz, isz);
      }
    }
}

void top_k(const KernelArgs& a) {
  const auto& p = static_cast<const prim::TopK&>(*a.prim);
  const Shape& s = (*a.in)[0].shape;
  int64_t no, n, ni;
  line_extent(s, static_cast<int>(s.size()) - 1, no, n, ni);
  int64_t k = p.k();
  if (k == 0 || no == 0) return;
  std::vector<int32_t> idx(static_cast<size_t>(n));
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = a.i<T>(0);
    T* vals = a.o<T>(0);
    int32_t* ind = a.o<int32_t>(1);
    for (int64_t o = 0; o < no; ++o) {
      const T* row = x + o * n;
      std::iota(idx.begin(), idx.end(), 0);
      // Larger first (NaN largest); equal values by lower index.
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t i, int32_t j) {
        return top_k_before(key(row[i]), i, key(row[j]), j);
      });
      for (int64_t j = 0; j < k; ++j) {
        vals[o * k + j] = row[idx[j]];
        ind[o * k + j] = idx[j];
      }
    }
  });
}

void searchsorted(const KernelArgs& a) {
  const auto& p = static_cast<const prim::SearchSorted&>(*a.prim);
  int64_t n = (*a.in)[0].shape[0];
  int64_t m = numel((*a.in)[1].shape);
  int32_t* out = a.o<int32_t>(0);
  dispatch_dtype((*a.in)[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* sorted = a.i<T>(0);
    const T* v = a.i<T>(1);
    for (int64_t q = 0; q < m; ++q) {
      auto at = [&](int64_t i) { return key(sorted[i]); };
      int64_t lo = sorted_position(at, n, key(v[q]), p.right());
      out[q] = static_cast<int32_t>(lo);
    }
  });
}

}  // namespace tsr::detail::cpu
