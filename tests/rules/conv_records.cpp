// Records of conv_general_dilated (spec §12.15) through its front-ends: batch-sharded
// images, spatially sharded ones (halo exchange on Explicit axes, design 0022; a
// tiling patchify window stays sharded), strides, dilations, feature groups
// (depthwise), conv_transpose, mixed layouts, and an output-feature-sharded kernel
// with an out_sharding. The filter gradient of every batch-sharded record is a partial
// convolution per device plus an all-reduce.
#include "rules/record.h"
#include "tsr/conv.h"

using namespace tsr;

namespace rules {
namespace {
const ConvLayout kNHWC{"NHWC", "HWIO", "NHWC"};
}  // namespace

std::vector<Record> conv_records() {
  std::vector<Record> r;
  const std::string halo_auto =
      "halo exchange runs on Explicit axes only: on Auto axes the spatial dimension is "
      "gathered";
  auto add2 = [&](std::string name, In lhs, In rhs,
                  std::function<Array(const Array&, const Array&)> f,
                  std::vector<std::vector<PartitionSpec>> specs, bool halo = false) {
    r.push_back({{"conv_general_dilated"},
                 std::move(name),
                 {lhs, rhs},
                 one([f](const std::vector<Array>& a) { return f(a[0], a[1]); }),
                 std::move(specs)});
    if (halo) r.back().auto_comm_why = halo_auto;
  };
  // NHWC images 8 x 8 x 8 x 4.
  const In img{{8, 8, 8, 4}};
  add2(
      "conv_3x3_same_nhwc", img, {{3, 3, 4, 6}},
      [](const Array& x, const Array& w) {
        return conv_general_dilated(x, w, {1, 1}, "SAME", {.dimension_numbers = kNHWC});
      },
      {{P(), P()},
       {P("x"), P()},
       {P(Axes{"x", "y"}), P()},
       {P(nullptr, "y"), P()},
       {P("x", "y"), P()}},
      true);
  add2("conv_3x3_stride2_valid_nchw", {{8, 4, 9, 9}}, {{6, 4, 3, 3}},
       [](const Array& x, const Array& w) {
         return conv(x, w, {2, 2}, "VALID");
       },
       {{P(), P()}, {P("x"), P()}, {P("y"), P()}});
  add2(
      "conv_grouped_rhs_dilated", img, {{2, 2, 2, 6}},
      [](const Array& x, const Array& w) {
        return conv_general_dilated(
            x, w, {1, 1}, "SAME",
            {.rhs_dilation = {2, 1}, .dimension_numbers = kNHWC, .feature_group_count = 2});
      },
      {{P(), P()}, {P("x"), P()}, {P(nullptr, nullptr, "y"), P()}}, true);
  add2(
      "conv_depthwise_stride2_same", img, {{3, 3, 1, 8}},
      [](const Array& x, const Array& w) {
        return conv_general_dilated(x, w, {2, 2}, "SAME",
                                    {.dimension_numbers = kNHWC, .feature_group_count = 4});
      },
      {{P(), P()}, {P("x"), P()}, {P(nullptr, "y"), P()}}, true);
  add2("conv_patchify_2x2_stride2", {{8, 8, 8, 3}}, {{2, 2, 3, 4}},
       [](const Array& x, const Array& w) {
         return conv_general_dilated(x, w, {2, 2}, "VALID", {.dimension_numbers = kNHWC});
       },
       {{P(), P()}, {P("x"), P()}, {P(nullptr, "y"), P()}, {P("x", nullptr, "y"), P()}});
  add2("conv_transpose_stride2_same", {{8, 4, 4, 4}}, {{3, 3, 4, 3}},
       [](const Array& x, const Array& w) {
         return conv_transpose(x, w, {2, 2}, "SAME");
       },
       {{P(), P()}, {P("x"), P()}, {P(Axes{"x", "y"}), P()}});
  add2("conv_1d_explicit_padding_lhs_dilation", {{8, 5, 3}}, {{3, 3, 2}},
       [](const Array& x, const Array& w) {
         return conv_general_dilated(
             x, w, {1}, Padding{{2, 1}},
             {.lhs_dilation = {2}, .dimension_numbers = {"NWC", "WIO", "NWC"}});
       },
       {{P(), P()}, {P("x"), P()}});
  add2("conv_nchw_in_nhwc_out", {{8, 3, 6, 6}}, {{3, 3, 3, 4}},
       [](const Array& x, const Array& w) {
         return conv_general_dilated(x, w, {1, 1}, "SAME",
                                     {.dimension_numbers = {"NCHW", "HWIO", "NHWC"}});
       },
       {{P(), P()}, {P("x"), P()}});
  // A kernel sharded over its output features: the result is sharded there (out_sharding
  // names it; the rule refuses a sharded rhs without one).
  add2("conv_out_features_sharded", {{8, 6, 6, 4}}, {{3, 3, 4, 8}},
       [](const Array& x, const Array& w) {
         ConvOptions o{.dimension_numbers = kNHWC};
         const ArrayType &tx = typeof(x), &tw = typeof(w);
         if (!tw.sharding.mesh().empty()) {
           std::vector<PartitionEntry> e(4);
           e[0] = tx.sharding.spec().entries().empty() ? PartitionEntry()
                                                       : tx.sharding.spec().entries()[0];
           if (tw.sharding.spec().entries().size() == 4) e[3] = tw.sharding.spec().entries()[3];
           o.out_sharding = NamedSharding(tw.sharding.mesh(), PartitionSpec(e));
         }
         return conv_general_dilated(x, w, {1, 1}, "SAME", o);
       },
       {{P(), P()},
        {P(), P(nullptr, nullptr, nullptr, "x")},
        {P("x"), P(nullptr, nullptr, nullptr, "y")}});
  return r;
}

static const RecordSet kSet(conv_records);

}  // namespace rules
