#include "rules/record.h"

using namespace tsr;

namespace rules {

std::vector<Record> linalg_records() {
  std::vector<Record> r;
  r.push_back({{"dot_general"},
               "matmul",
               {{{8, 4}}, {{4, 8}}},
               one([](const std::vector<Array>& a) { return matmul(a[0], a[1]); }),
               {{P(), P()},
                {P("x"), P()},
                {P(), P(nullptr, "x")},
                {P("x"), P(nullptr, "y")},
                {P(nullptr, "x"), P()},
                {P("y"), P(nullptr, "x")}}});
  r.push_back({{"dot_general"},
               "matmul_contract_sharded_out_sharding",
               {{{8, 4}}, {{4, 8}}},
               one([](const std::vector<Array>& a) {
                 return matmul(a[0], a[1], {.out_sharding = P("x", nullptr)});
               }),
               {{P(nullptr, "x"), P("x")}, {P(nullptr, "y"), P("y")}, {P("y", "x"), P("x")}}});
  r.push_back({{"dot_general"},
               "matmul_unreduced_then_reshard",
               {{{8, 4}}, {{4, 8}}},
               one([](const std::vector<Array>& a) {
                 Array u =
                     matmul(a[0], a[1], {.out_sharding = P(nullptr, nullptr, Unreduced{{"x"}})});
                 return reshard(u, P());
               }),
               {{P(nullptr, "x"), P("x")}}});
  r.back().oracle = one([](const std::vector<Array>& a) { return matmul(a[0], a[1]); });
  r.push_back({{"dot_general"},
               "batched_matmul",
               {{{4, 8, 4}}, {{4, 4, 2}}},
               one([](const std::vector<Array>& a) { return matmul(a[0], a[1]); }),
               {{P(), P()}, {P("x"), P("x")}, {P("x", "y"), P("x")}}});
  r.push_back({{"dot_general"},
               "dot_vector",
               {{{8, 4}}, {{4}}},
               one([](const std::vector<Array>& a) { return dot(a[0], a[1]); }),
               {{P(), P()}, {P("x"), P()}, {P("x", "y"), P("y")}}});
  r.push_back({{"dot_general"},
               "einsum_three",
               {{{8, 4}}, {{4, 8}}, {{8, 2}}},
               one([](const std::vector<Array>& a) {
                 return einsum("ij,jk,kl->il", {a[0], a[1], a[2]});
               }),
               {{P(), P(), P()}, {P("x"), P(), P()}, {P("x"), P(nullptr, "y"), P()}}});
  r.push_back({{"dot_general"},
               "einsum_three_out_sharding",
               {{{8, 8}}, {{8, 8}}, {{8, 8}}},
               one([](const std::vector<Array>& a) {
                 return einsum("ab,bc,ac->c", {a[0], a[1], a[2]}, {.out_sharding = P()});
               }),
               {{P("x", "y"), P("y", nullptr), P("x", nullptr)},
                {P("x"), P("x"), P(nullptr, "x")},
                {P(), P(), P()}}});
  r.push_back({{"dot_general", "reduce_sum"},
               "einsum_ellipsis_and_trace",
               {{{4, 8, 8}}, {{8, 2}}},
               one([](const std::vector<Array>& a) {
                 return einsum("...ii,ij->...j", {a[0], a[1]}, {.out_sharding = P()});
               }),
               {{P(), P()}, {P("x"), P()}, {P("x", "y"), P("y")}}});
  r.push_back({{"dot_general"},
               "tensordot",
               {{{8, 4, 2}}, {{4, 2, 8}}},
               one([](const std::vector<Array>& a) { return tensordot(a[0], a[1]); }),
               {{P(), P()}, {P("x"), P()}, {P("x"), P(nullptr, nullptr, "y")}}});
  r.push_back({{"dot_general"},
               "einsum_batch_transpose",
               {{{4, 8, 2}}, {{4, 2, 8}}},
               one([](const std::vector<Array>& a) {
                 return einsum("bij,bjk->bki", {a[0], a[1]});
               }),
               {{P(), P()}, {P("x"), P("x")}}});
  r.push_back({{"dot_general"},
               "matmul_int",
               {{{8, 4}, int32, Gen::Int}, {{4, 8}, int32, Gen::Int}},
               one([](const std::vector<Array>& a) { return matmul(a[0], a[1]); }),
               {{P(), P()}, {P("x"), P()}}});
  return r;
}

static const RecordSet kSet(linalg_records);

}  // namespace rules
