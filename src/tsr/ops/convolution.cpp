// Convolution front-ends (lax/convolution.py): dimension numbers from layout strings,
// named padding, conv / conv_with_general_padding / conv_transpose, and the halo
// exchange for spatially sharded images (design 0022).
#include <algorithm>
#include <set>

#include "tsr/conv.h"
#include "tsr/error.h"
#include "tsr/ops/halo.h"
#include "tsr/ops/ops_common.h"
#include "tsr/prims/common.h"
#include "tsr/prims/convolution.h"
#include "tsr/prims/windowed.h"
#include "tsr/shard_map.h"

namespace tsr {
using namespace detail;

namespace {

std::string names_str(const std::array<std::string, 3>& n) {
  return "('" + n[0] + "', '" + n[1] + "', '" + n[2] + "')";
}

// lax.conv_general_permutations.
ConvDimensionNumbers permutations(const std::array<std::string, 3>& dn) {
  const char pairs[3][2] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
  for (int i = 0; i < 3; ++i) {
    const std::string& s = dn[static_cast<size_t>(i)];
    if (std::count(s.begin(), s.end(), pairs[i][0]) != 1 ||
        std::count(s.begin(), s.end(), pairs[i][1]) != 1)
      throw TypeError("[conv_general_dilated] convolution dimension_numbers[" + std::to_string(i) +
                      "] must contain the characters '" + pairs[i][0] + "' and '" + pairs[i][1] +
                      "' exactly once, got " + s + ". Name the batch and feature dims once each.");
    if (std::set<char>(s.begin(), s.end()).size() != s.size())
      throw TypeError("[conv_general_dilated] convolution dimension_numbers[" + std::to_string(i) +
                      "] cannot have duplicate characters, got " + s +
                      ". Give each dimension its own letter.");
  }
  auto spatial = [&](const std::string& s, int i) {
    std::set<char> r(s.begin(), s.end());
    r.erase(pairs[i][0]);
    r.erase(pairs[i][1]);
    return r;
  };
  if (!(spatial(dn[0], 0) == spatial(dn[1], 1) && spatial(dn[1], 1) == spatial(dn[2], 2)))
    throw TypeError(
        "[conv_general_dilated] convolution dimension_numbers elements must each have "
        "the same set of spatial characters, got " +
        names_str(dn) + ". Use the same spatial letters in all three.");
  const std::string& rhs = dn[1];
  auto getperm = [&](const std::string& s, int i) {
    std::vector<int> sp;
    for (size_t j = 0; j < s.size(); ++j)
      if (s[j] != pairs[i][0] && s[j] != pairs[i][1]) sp.push_back(static_cast<int>(j));
    if (i != 1)
      std::stable_sort(sp.begin(), sp.end(), [&](int a, int b) {
        return rhs.find(s[static_cast<size_t>(a)]) < rhs.find(s[static_cast<size_t>(b)]);
      });
    std::vector<int> r{static_cast<int>(s.find(pairs[i][0])),
                       static_cast<int>(s.find(pairs[i][1]))};
    r.insert(r.end(), sp.begin(), sp.end());
    return r;
  };
  return {getperm(dn[0], 0), getperm(dn[1], 1), getperm(dn[2], 2)};
}

// Halo exchange for a convolution over spatially sharded lhs (Explicit axes, replicated
// rhs, no lhs dilation): the halos, or none when the primitive's own layout serves
// (nothing overlaps, or a dimension needs a gather).
std::optional<std::vector<Halo>> conv_halos(const Array& lhs, const Array& rhs,
                                            const prim::ConvParams& p, const Shape& out) {
  const ArrayType& t = lhs.type();
  if (!halo_applies(t)) return std::nullopt;
  for (const auto& e : entries_of(rhs.type()))
    if (!e.is_none()) return std::nullopt;
  auto e = entries_of(t);
  if (!e[static_cast<size_t>(p.dn.lhs[1])].is_none()) return std::nullopt;
  std::vector<Halo> hs;
  for (size_t i = 2; i < p.dn.lhs.size(); ++i) {
    const size_t d = static_cast<size_t>(p.dn.lhs[i]), s = i - 2;
    if (e[d].is_none()) continue;
    if (p.lhs_dilation[s] != 1) return std::nullopt;
    const int64_t win =
        prim::dilated_size(rhs.shape()[static_cast<size_t>(p.dn.rhs[i])], p.rhs_dilation[s]);
    HaloNeed need =
        halo_need(static_cast<int>(d), e[d], t.sharding.mesh(), lhs.shape()[d],
                  out[static_cast<size_t>(p.dn.out[i])], win, p.strides[s], p.padding[s].first);
    if (need.gather) return std::nullopt;
    if (need.halo) hs.push_back(*need.halo);
  }
  if (hs.empty()) return std::nullopt;
  return hs;
}

Array bind_conv(const Array& lhs, const Array& rhs, const prim::ConvParams& p,
                std::optional<NamedSharding> os, std::optional<DType> pref) {
  auto prim = std::make_shared<prim::ConvGeneralDilated>(p, os, pref);
  if (os) return bind1(prim, {lhs, rhs});
  // The rule's result type first: its errors come before any exchange.
  const ArrayType out = prim->infer({lhs.type(), rhs.type()})[0];
  auto hs = conv_halos(lhs, rhs, p, out.shape);
  std::optional<Mesh> mesh = hs ? halo_mesh(lhs) : std::nullopt;
  if (!hs || !mesh) return bind1(prim, {lhs, rhs});
  prim::ConvParams local = p;
  for (const auto& h : *hs) {
    for (size_t i = 2; i < p.dn.lhs.size(); ++i)
      if (p.dn.lhs[i] == h.dim) local.padding[i - 2] = {0, 0};
  }
  const std::vector<Halo> halos = *hs;
  auto body = [=](const Array& b, const Array& w) {
    return bind1(std::make_shared<prim::ConvGeneralDilated>(local, std::nullopt, pref),
                 {grow_halos(b, halos, 0.0), w});
  };
  return shard_map(body, {.mesh = *mesh,
                          .in_specs = {lhs.type().sharding.spec(), PartitionSpec()},
                          .out_specs = out.sharding.spec(),
                          .name = "conv_halo"})(lhs, rhs);
}

}  // namespace

ConvDimensionNumbers ConvLayout::numbers(const Shape& lhs, const Shape& rhs) const {
  if (dn_) return *dn_;
  if (lhs.size() != rhs.size())
    throw TypeError(
        "[conv_general_dilated] convolution requires lhs and rhs ndim to be equal, "
        "got " +
        std::to_string(lhs.size()) + " and " + std::to_string(rhs.size()) +
        ". Give both operands rank n + 2.");
  if (!names_) {
    std::vector<int> iota(lhs.size());
    for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<int>(i);
    return {iota, iota, iota};
  }
  for (size_t i = 0; i < 3; ++i)
    if ((*names_)[i].size() != lhs.size())
      throw TypeError("[conv_general_dilated] convolution dimension_numbers[" + std::to_string(i) +
                      "] must have len equal to the ndim of lhs and rhs, got " +
                      std::to_string((*names_)[i].size()) + " for lhs and rhs shapes " +
                      shape_str(lhs) + " and " + shape_str(rhs) +
                      ". Give one letter per dimension.");
  return permutations(*names_);
}

ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvLayout& layout) {
  return layout.numbers(lhs_shape, rhs_shape);
}

Array conv_general_dilated(const Array& lhs, const Array& rhs, const Shape& window_strides,
                           const Padding& padding, const ConvOptions& o) {
  if (o.preferred_element_type) check_dtype(*o.preferred_element_type, "conv_general_dilated");
  ConvDimensionNumbers dn = o.dimension_numbers.numbers(lhs.shape(), rhs.shape());
  const size_t ns = lhs.ndim() >= 2 ? static_cast<size_t>(lhs.ndim() - 2) : 0;
  prim::ConvParams p;
  p.dn = {dn.lhs_spec, dn.rhs_spec, dn.out_spec};
  p.strides = window_strides;
  p.lhs_dilation = o.lhs_dilation.empty() ? Shape(ns, 1) : o.lhs_dilation;
  p.rhs_dilation = o.rhs_dilation.empty() ? Shape(ns, 1) : o.rhs_dilation;
  p.feature_group_count = o.feature_group_count;
  p.batch_group_count = o.batch_group_count;
  if (!padding.type().empty()) {
    if (std::any_of(p.lhs_dilation.begin(), p.lhs_dilation.end(), [](int64_t d) { return d != 1; }))
      throw ValueError(
          "[conv_general_dilated] String padding is not implemented for transposed "
          "convolution using this op. Please either exactly specify the required "
          "padding or use conv_transpose. Got padding '" +
          padding.type() + "' with lhs_dilation " + p_ints(p.lhs_dilation) + ".");
    const bool ok_ranks = lhs.ndim() == rhs.ndim() && dn.lhs_spec.size() == lhs.shape().size() &&
                          dn.rhs_spec.size() == rhs.shape().size() && p.rhs_dilation.size() == ns &&
                          window_strides.size() == ns;
    if (ok_ranks) {
      Shape in, win;
      for (size_t i = 0; i < ns; ++i) {
        in.push_back(lhs.shape()[static_cast<size_t>(dn.lhs_spec[i + 2])]);
        win.push_back(prim::dilated_size(rhs.shape()[static_cast<size_t>(dn.rhs_spec[i + 2])],
                                         p.rhs_dilation[i]));
      }
      p.padding = padtype_to_pads(in, win, window_strides, padding);
    } else {
      p.padding.assign(ns, {0, 0});  // the rule reports the mismatch
    }
  } else {
    p.padding = padding.pads();
  }
  return bind_conv(lhs, rhs, p, canonicalize_sharding(o.out_sharding, "conv_general_dilated"),
                   o.preferred_element_type);
}

Array conv(const Array& lhs, const Array& rhs, const Shape& window_strides, const Padding& padding,
           std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, window_strides, padding,
                              {.preferred_element_type = preferred_element_type});
}

Array conv_with_general_padding(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                const Padding& padding, const Shape& lhs_dilation,
                                const Shape& rhs_dilation,
                                std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, window_strides, padding,
                              {.lhs_dilation = lhs_dilation,
                               .rhs_dilation = rhs_dilation,
                               .preferred_element_type = preferred_element_type});
}

namespace {
// lax._conv_transpose_padding for one dim: kernel k (dilated), stride s.
std::pair<int64_t, int64_t> transpose_padding(int64_t k, int64_t s, const std::string& type,
                                              std::pair<int64_t, int64_t> pair) {
  int64_t pad_len, pad_a;
  if (type == "SAME") {
    pad_len = k + s - 2;
    pad_a = s > k - 1 ? k - 1 : (pad_len + 1) / 2;
  } else if (type == "VALID") {
    pad_len = k + s - 2 + std::max<int64_t>(k - s, 0);
    pad_a = k - 1;
  } else {
    pad_a = k - pair.first - 1;
    pad_len = pad_a + (k - pair.second - 1);
  }
  return {pad_a, pad_len - pad_a};
}
}  // namespace

Array conv_transpose(const Array& lhs, const Array& rhs0, const Shape& strides,
                     const Padding& padding, const ConvTransposeOptions& o) {
  if (lhs.ndim() != rhs0.ndim() || lhs.ndim() < 2)
    throw ValueError("[conv_transpose] lhs and rhs need the same rank >= 2. Got " +
                     lhs.type().str() + " and " + rhs0.type().str() +
                     "; expected (batch, spatial..., feature) operands of rank n + 2.");
  const int nd = lhs.ndim();
  ConvLayout layout = o.dimension_numbers;
  if (layout.is_default()) {
    static const char* lhs_names[] = {"NC", "NHC", "NHWC", "NHWDC"};
    static const char* rhs_names[] = {"IO", "HIO", "HWIO", "HWDIO"};
    if (nd > 5)
      throw ValueError("[conv_transpose] No 4+ dimensional dimension_number defaults. Got rank " +
                       std::to_string(nd) + "; expected rank <= 5, or pass dimension_numbers.");
    layout = ConvLayout(lhs_names[nd - 2], rhs_names[nd - 2], lhs_names[nd - 2]);
  }
  ConvDimensionNumbers dn = layout.numbers(lhs.shape(), rhs0.shape());
  const size_t ns = static_cast<size_t>(nd - 2);
  Shape rhs_dilation = o.rhs_dilation.empty() ? Shape(ns, 1) : o.rhs_dilation;
  if (strides.size() != ns || rhs_dilation.size() != ns)
    throw ValueError(
        "[conv_transpose] strides and rhs_dilation need one entry per spatial "
        "dimension. Got strides " +
        p_ints(strides) + " and rhs_dilation " + p_ints(rhs_dilation) + "; expected " +
        std::to_string(ns) + " entries each.");
  std::string t = padding.type();
  for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Padding pads = padding;
  if (o.use_consistent_padding || t == "SAME" || t == "VALID") {
    if (padding.type().empty() && padding.pads().size() != ns)
      throw ValueError(
          "[conv_transpose] padding needs one (lo, hi) pair per spatial dimension. "
          "Got " +
          std::to_string(padding.pads().size()) + "; expected " + std::to_string(ns) + ".");
    if (!padding.type().empty() && t != "SAME" && t != "VALID")
      throw ValueError("[conv_transpose] Invalid padding mode: " + padding.type() +
                       ". Got it with use_consistent_padding; expected 'SAME', 'VALID' or pairs.");
    std::vector<std::pair<int64_t, int64_t>> p;
    for (size_t i = 0; i < ns; ++i) {
      const int64_t k = prim::dilated_size(rhs0.shape()[static_cast<size_t>(dn.rhs_spec[i + 2])],
                                           rhs_dilation[i]);
      p.push_back(transpose_padding(
          k, strides[i], t,
          padding.type().empty() ? padding.pads()[i] : std::pair<int64_t, int64_t>{0, 0}));
    }
    pads = p;
  }
  Array rhs = rhs0;
  if (o.transpose_kernel) {
    rhs = rev(rhs, std::vector<int>(dn.rhs_spec.begin() + 2, dn.rhs_spec.end()));
    rhs = swapaxes(rhs, dn.rhs_spec[0], dn.rhs_spec[1]);
  }
  return conv_general_dilated(lhs, rhs, Shape(ns, 1), pads,
                              {.lhs_dilation = strides,
                               .rhs_dilation = rhs_dilation,
                               .dimension_numbers = dn,
                               .preferred_element_type = o.preferred_element_type});
}

}  // namespace tsr
