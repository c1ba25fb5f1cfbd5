#pragma once
// Builds gather_scatter_plan.h's plans from a primitive and its kernel arguments
// (host only: the CPU kernels and the CUDA backend's host side both call these).
#include <algorithm>
#include <string>
#include <vector>

#include "tsr/backends/common/gather_scatter_plan.h"
#include "tsr/backends/common/strided_plans.h"
#include "tsr/backends/kernel.h"
#include "tsr/error.h"
#include "tsr/prims/gather_scatter.h"

namespace tsr::detail {

/** NotImplementedError unless every array of a gather / scatter has at most `cap`
 *  dims. */
inline void check_indexing_rank(const KernelArgs& a, const char* prim, int cap) {
  auto too_many = [&](size_t r) {
    if (r > static_cast<size_t>(cap))
      throw NotImplementedError(std::string("[") + prim + "] the kernel takes arrays of at most " +
                                std::to_string(cap) + " dims; got " + std::to_string(r) +
                                ". Reshape to merge dims first.");
  };
  for (const auto& t : *a.in) too_many(t.shape.size());
  for (const auto& t : *a.out) too_many(t.shape.size());
}

/** The gather plan of a's blocks (operand 0, indices 1, output 0), arrays of N. */
template <int N = kIndexingMaxDims>
GatherPlanT<N> gather_plan(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Gather&>(*a.prim);
  const auto& dn = p.dims();
  check_indexing_rank(a, "gather", N);
  const LocalType& O = (*a.in)[0];
  const LocalType& I = (*a.in)[1];
  const LocalType& Out = (*a.out)[0];
  const Shape& Og = a.in_global[0];
  const Shape& Oo = a.in_origin[0];
  const Shape& Io = a.in_origin[1];
  const Shape& Po = *a.out_origin;
  const std::vector<int64_t> os = row_major(O.shape), is = row_major(I.shape);
  const std::vector<int> wd = prim::dims_except(static_cast<int>(O.shape.size()),
                                                dn.collapsed_slice_dims, dn.operand_batching_dims);
  GatherPlanT<N> g;
  g.orank = static_cast<int>(O.shape.size());
  g.out_rank = static_cast<int>(Out.shape.size());
  g.index_dtype = I.dtype;
  g.fill = p.mode() == IndexMode::FillOrDrop;
  const int irank = static_cast<int>(I.shape.size());
  g.vstride = irank > 0 ? is[irank - 1] : 1;
  for (int i = 0; i < g.out_rank; ++i) {
    g.out_size[i] = Out.shape[i];
    if (!prim::has_dim(dn.offset_dims, i)) g.batch_out_dim[g.nb++] = i;
  }
  for (int k = 0; k < g.nb; ++k) {
    g.idx_stride[k] = is[k];
    g.idx_shift[k] = Po[g.batch_out_dim[k]] - Io[k];
  }
  g.nv = static_cast<int>(dn.start_index_map.size());
  for (int v = 0; v < g.nv; ++v) {
    int d = dn.start_index_map[v];
    g.start_dim[v] = d;
    g.start_hi[v] = Og[d] - p.slice_sizes()[d];
  }
  g.nob = static_cast<int>(dn.operand_batching_dims.size());
  for (int i = 0; i < g.nob; ++i) {
    int k = dn.start_indices_batching_dims[i];
    g.batch_dim[i] = dn.operand_batching_dims[i];
    g.batch_k[i] = k;
    g.batch_shift[i] = Po[g.batch_out_dim[k]];
  }
  for (int d = 0; d < g.orank; ++d) {
    g.op_stride[d] = os[d];
    g.op_origin[d] = Oo[d];
  }
  g.nw = static_cast<int>(wd.size());
  for (int w = 0; w < g.nw; ++w) {
    g.window_out_dim[w] = dn.offset_dims[w];
    g.window_stride[w] = os[wd[w]];
    g.base += Po[dn.offset_dims[w]] * os[wd[w]];
  }
  return g;
}

/** The scatter plan of a's blocks (operand 0, indices 1, updates 2, output 0), arrays
 *  of N. */
template <int N = kIndexingMaxDims>
ScatterPlanT<N> scatter_plan(const KernelArgs& a) {
  const auto& p = static_cast<const prim::Scatter&>(*a.prim);
  const auto& dn = p.dims();
  check_indexing_rank(a, p.name(), N);
  const LocalType& I = (*a.in)[1];
  const LocalType& U = (*a.in)[2];
  const LocalType& Out = (*a.out)[0];
  const Shape& Og = a.in_global[0];
  const Shape& Ug = a.in_global[2];
  const Shape& Io = a.in_origin[1];
  const Shape& Uo = a.in_origin[2];
  const Shape& Po = *a.out_origin;
  const auto& uw = dn.update_window_dims;
  ScatterPlanT<N> s;
  s.orank = static_cast<int>(Out.shape.size());
  s.urank = static_cast<int>(U.shape.size());
  s.index_dtype = I.dtype;
  s.clip = p.mode() == IndexMode::Clip;
  const std::vector<int64_t> ps = row_major(Out.shape), is = row_major(I.shape);
  const int irank = static_cast<int>(I.shape.size());
  s.vstride = irank > 0 ? is[irank - 1] : 1;
  const std::vector<int> ow =
      prim::dims_except(s.orank, dn.inserted_window_dims, dn.operand_batching_dims);
  const std::vector<int> us = prim::dims_except(s.urank, uw, {});
  Shape wsize(s.orank, 1);  // the global window extent per operand dim
  s.nw = static_cast<int>(uw.size());
  for (int j = 0; j < s.nw; ++j) {
    wsize[ow[j]] = Ug[uw[j]];
    s.windowed[ow[j]] = true;
    s.window_odim[j] = ow[j];
    s.window_udim[j] = uw[j];
    s.window_origin[j] = Uo[uw[j]];
  }
  s.ns = static_cast<int>(us.size());
  for (int k = 0; k < s.ns; ++k) {
    s.scatter_udim[k] = us[k];
    s.scatter_size[k] = U.shape[us[k]];
    s.idx_stride[k] = is[k];
    s.idx_shift[k] = Uo[us[k]] - Io[k];
  }
  s.nv = static_cast<int>(dn.scatter_dims_to_operand_dims.size());
  for (int v = 0; v < s.nv; ++v) {
    int d = dn.scatter_dims_to_operand_dims[v];
    s.start_dim[v] = d;
    s.start_hi[v] = Og[d] - wsize[d];
  }
  s.nob = static_cast<int>(dn.operand_batching_dims.size());
  for (int i = 0; i < s.nob; ++i) {
    int k = dn.scatter_indices_batching_dims[i];
    s.batch_dim[i] = dn.operand_batching_dims[i];
    s.batch_k[i] = k;
    s.batch_shift[i] = Uo[us[k]];
  }
  for (int d = 0; d < s.orank; ++d) {
    s.out_size[d] = Out.shape[d];
    s.out_origin[d] = Po[d];
    s.out_stride[d] = ps[d];
  }
  for (int u = 0; u < s.urank; ++u) s.upd_size[u] = U.shape[u];
  return s;
}

}  // namespace tsr::detail
