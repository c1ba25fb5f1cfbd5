// Host-side helpers the CUDA kernel files share.
#include <string>

#include "tsr/backends/cuda/launch.h"
#include "tsr/error.h"

namespace tsr::detail::cuda {

void unsupported(const char* prim, DType got) {
  throw NotImplementedError(std::string("[") + prim + "] the CUDA kernel does not support dtype " +
                            dtype_name(got) + ". Got " + dtype_name(got) +
                            "; expected a dtype the primitive's rule accepts on every platform. "
                            "Report this as a Tessera bug, and run the op on the CPU meanwhile.");
}

void too_many_dims(const char* prim, size_t rank) {
  throw NotImplementedError(std::string("[") + prim + "] the CUDA kernels take at most " +
                            std::to_string(kMaxDims) + " dims. Got rank " + std::to_string(rank) +
                            "; expected at most " + std::to_string(kMaxDims) +
                            ". Reshape to merge dims first.");
}

Strides broadcast_strides(const Shape& out, std::initializer_list<const Shape*> operands) {
  Strides st;
  if (out.size() > static_cast<size_t>(kMaxDims)) too_many_dims("broadcast", out.size());
  st.rank = static_cast<int>(out.size());
  for (int d = 0; d < st.rank; ++d) st.size[d] = out[d];
  int k = 0;
  for (const Shape* s : operands) {
    int64_t acc = 1;
    for (int d = st.rank - 1; d >= 0; --d) {
      bool bcast = s->empty() || (*s)[d] == 1;
      st.in[k][d] = bcast ? 0 : acc;
      if (!s->empty()) acc *= (*s)[d];
    }
    ++k;
  }
  return st;
}

Strides read_strides(const Shape& extent, const std::vector<int64_t>& strides, const char* prim) {
  if (extent.size() > static_cast<size_t>(kMaxDims)) too_many_dims(prim, extent.size());
  Strides st;
  st.rank = static_cast<int>(extent.size());
  for (int d = 0; d < st.rank; ++d) st.size[d] = extent[d], st.in[0][d] = strides[d];
  return st;
}

}  // namespace tsr::detail::cuda
