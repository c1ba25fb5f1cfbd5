// Leaf-wise math behind the tree calls: the global norm, apply_updates, and the
// micro-batch split of gradient accumulation.
#include <tsr/error.h>
#include <tsr/ops.h>
#include <tsr/optim.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tsr/optim/common.h"

namespace tsr::optim::detail {

Array global_norm_leaves(const std::vector<Array>& leaves) {
  Array total;
  for (const Array& x : leaves) {
    // Squares of 16-bit floats are summed in float32, as the norm of a large tree
    // would otherwise lose most of its digits.
    const DType d = x.dtype() == float64 ? float64 : float32;
    Array s = sum(square(astype(x, d)));
    total = total.valid() ? total + s : s;
  }
  return total.valid() ? sqrt(total) : zeros({}, float32);
}

std::vector<Array> add_leaves(const std::vector<Array>& params, const std::vector<Array>& updates) {
  std::vector<Array> out;
  out.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    out.push_back(astype(params[i] + updates[i], params[i].dtype()));
  return out;
}

std::vector<Array> split_micro_batches(const std::vector<Array>& leaves, const Paths& paths,
                                       int64_t num_micro) {
  const std::string api = "[optim.accumulate_gradients] ";
  if (num_micro < 1)
    throw ValueError(api +
                     "num_micro must be at least 1. Got num_micro=" + std::to_string(num_micro) +
                     "; expected num_micro >= 1. Pass the number of micro-batches per step.");
  if (leaves.empty())
    throw ValueError(api +
                     "the batch has no Array leaves. Got an empty batch tree; expected "
                     "leaves with a leading batch dimension. Pass the batch to split.");
  std::vector<Array> out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& x = leaves[i];
    const std::string& where = paths[i];
    if (x.ndim() == 0)
      throw ValueError(api + where + " is a scalar. Got " + typeof(x).str() +
                       "; expected a leading batch dimension. Put per-example values in "
                       "arrays of shape (batch, ...), or pass scalars through the params.");
    const int64_t n = x.shape()[0];
    if (n % num_micro != 0)
      throw ValueError(api + where + " has " + std::to_string(n) + " rows, which " +
                       std::to_string(num_micro) + " micro-batches do not divide. Got " +
                       typeof(x).str() + "; expected a leading dimension that is a multiple of " +
                       std::to_string(num_micro) + ". Pick num_micro dividing the batch size.");
    // (n, ...) -> (n / m, m, ...) -> (m, n / m, ...): micro-batch k holds rows k, k + m, ...
    Shape s = x.shape();
    s[0] = n / num_micro;
    s.insert(s.begin() + 1, num_micro);
    out.push_back(moveaxis(reshape(x, s), 1, 0));
  }
  return out;
}

std::vector<Array> micro_batch(const std::vector<Array>& split, int64_t k) {
  std::vector<Array> out;
  for (const Array& x : split) {
    Shape start(static_cast<size_t>(x.ndim()), 0), limit = x.shape();
    start[0] = k;
    limit[0] = k + 1;
    out.push_back(squeeze(slice(x, start, limit), 0));
  }
  return out;
}

std::vector<Array> micro_batches_after_first(const std::vector<Array>& split) {
  std::vector<Array> out;
  for (const Array& x : split) {
    Shape start(static_cast<size_t>(x.ndim()), 0);
    start[0] = 1;
    out.push_back(slice(x, start, x.shape()));
  }
  return out;
}

}  // namespace tsr::optim::detail
