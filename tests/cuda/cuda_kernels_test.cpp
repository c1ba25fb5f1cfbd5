// Every CUDA kernel against the CPU kernel of the same primitive, on the same inputs
// (the CPU kernels are the oracle the rest of the suite checks). Needs a GPU: each
// test skips with one line without one. scripts/gpu_check.sh runs it on a lent GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tsr/backends/common/elementwise_apply.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/backends/fused.h"
#include "tsr/core/convert.h"
#include "tsr/error.h"
#include "tsr/prims/complex.h"
#include "tsr/prims/convolution.h"
#include "tsr/prims/creation.h"
#include "tsr/prims/cumulative.h"
#include "tsr/prims/decompositions.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/fft.h"
#include "tsr/prims/gather_scatter.h"
#include "tsr/prims/linalg.h"
#include "tsr/prims/random.h"
#include "tsr/prims/reduction.h"
#include "tsr/prims/shape_ops.h"
#include "tsr/prims/sort.h"
#include "tsr/prims/windowed.h"

namespace tsr::detail::cuda {
namespace {

#define TSR_NEED_GPU() \
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU: " << no_gpu_reason()

struct Host {
  LocalType t;
  std::vector<unsigned char> bytes;
};

// Values of dtype t from doubles (the host's conversion).
Host make(DType t, Shape s, const std::function<double(int64_t)>& f) {
  Host h{{std::move(s), t}, {}};
  int64_t n = numel(h.t.shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = f(i);
  h.bytes.resize(static_cast<size_t>(n) * itemsize(t));
  convert(v.data(), DType::Float64, h.bytes.data(), t, n);
  return h;
}
Host random(DType t, Shape s, uint32_t seed, double lo = -3, double hi = 3) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  bool integral = t == DType::Bool || is_integer(t);
  return make(t, std::move(s), [&](int64_t) {
    double x = u(g);
    return integral ? std::floor(x) : x;
  });
}

// A complex array as its parts (real, imaginary, ...), every other dtype converted.
std::vector<double> as_double(const LocalType& t, const std::vector<unsigned char>& b) {
  int64_t n = numel(t.shape);
  DType from = t.dtype;
  if (is_complex(t.dtype)) {
    n *= 2;
    from = t.dtype == DType::Complex128 ? DType::Float64 : DType::Float32;
  }
  std::vector<double> v(static_cast<size_t>(n));
  convert(b.data(), from, v.data(), DType::Float64, n);
  return v;
}

// A complex array of shape s from its parts, interleaved (real, imaginary, ...).
Host make_complex_host(DType t, Shape s, uint32_t seed) {
  DType r = t == DType::Complex128 ? DType::Float64 : DType::Float32;
  Shape parts = s;
  parts.push_back(2);
  Host h = random(r, parts, seed);
  h.t = {std::move(s), t};
  return h;
}

// Runs prim's kernel on `backend` and returns the outputs' bytes.
std::vector<std::vector<unsigned char>> run(const char* backend, const Primitive& p,
                                            const std::vector<Host>& ins,
                                            const std::vector<LocalType>& outs, Shape origin) {
  std::vector<LocalType> it;
  for (const auto& h : ins) it.push_back(h.t);
  std::vector<std::vector<unsigned char>> result(outs.size());
  for (size_t k = 0; k < outs.size(); ++k)
    result[k].resize(static_cast<size_t>(numel(outs[k].shape)) * itemsize(outs[k].dtype));
  std::vector<const void*> ip;
  std::vector<void*> op;
  bool gpu = std::string(backend) == "cuda";
  std::vector<void*> dev;
  for (const auto& h : ins) {
    if (!gpu) {
      ip.push_back(h.bytes.data());
      continue;
    }
    void* d = nullptr;
    check(cudaMalloc(&d, std::max<size_t>(h.bytes.size(), 16)), "test", "cudaMalloc");
    check(cudaMemcpy(d, h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice), "test",
          "cudaMemcpy");
    dev.push_back(d);
    ip.push_back(d);
  }
  for (auto& r : result) {
    if (!gpu) {
      op.push_back(r.data());
      continue;
    }
    void* d = nullptr;
    check(cudaMalloc(&d, std::max<size_t>(r.size(), 16)), "test", "cudaMalloc");
    dev.push_back(d);
    op.push_back(d);
  }
  if (origin.empty() && !outs.empty()) origin.assign(outs[0].shape.size(), 0);
  // One device holds everything: each input's block is at the origin and whole (the
  // indexing kernels read these).
  std::vector<Shape> in_origin, in_global;
  for (const auto& t : it) {
    in_origin.emplace_back(t.shape.size(), 0);
    in_global.push_back(t.shape);
  }
  KernelArgs a;
  a.in_origin = in_origin.data();
  a.in_global = in_global.data();
  a.prim = &p;
  a.in = &it;
  a.out = &outs;
  a.in_ptr = ip.data();
  a.out_ptr = op.data();
  a.out_origin = &origin;
  find_kernel(p.name(), backend)(a);
  if (gpu) {
    check(cudaDeviceSynchronize(), "test", "cudaDeviceSynchronize");
    for (size_t k = 0; k < result.size(); ++k)
      check(cudaMemcpy(result[k].data(), op[k], result[k].size(), cudaMemcpyDeviceToHost), "test",
            "cudaMemcpy");
    for (void* d : dev) cudaFree(d);
  }
  return result;
}

// The tolerance a dtype's results are compared with: exact for integers and bool,
// relative for floats (transcendental functions differ in the last bits between libm
// and CUDA's math library; sums in their order).
double tolerance(DType t) {
  switch (t) {
    case DType::Float16:
    case DType::BFloat16:
      return 1e-2;
    case DType::Float32:
    case DType::Complex64:  // per part
      return 2e-5;
    case DType::Float64:
    case DType::Complex128:
      return 1e-12;
    default:
      return 0;
  }
}

void expect_same(const Primitive& p, const std::vector<Host>& ins,
                 const std::vector<LocalType>& outs, const std::string& label, bool exact = false,
                 const Shape& origin = {}, double tol_override = -1) {
  auto cpu = run("cpu", p, ins, outs, origin);
  auto gpu = run("cuda", p, ins, outs, origin);
  for (size_t k = 0; k < outs.size(); ++k) {
    auto a = as_double(outs[k], cpu[k]), b = as_double(outs[k], gpu[k]);
    double tol = exact ? 0 : (tol_override >= 0 ? tol_override : tolerance(outs[k].dtype));
    int bad = 0;
    for (size_t i = 0; i < a.size() && bad < 5; ++i) {
      bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                  std::fabs(a[i] - b[i]) <= tol * std::max(1.0, std::fabs(a[i]));
      if (!same) {
        ++bad;
        ADD_FAILURE() << label << " output " << k << " [" << i << "]: cpu " << a[i] << ", cuda "
                      << b[i];
      }
    }
  }
}

const DType kReal[] = {DType::Bool,   DType::Int8,    DType::Int16,    DType::Int32,
                       DType::Int64,  DType::UInt8,   DType::UInt16,   DType::UInt32,
                       DType::UInt64, DType::Float16, DType::BFloat16, DType::Float32,
                       DType::Float64};

bool float_like(DType t) { return t == DType::Float16 || t == DType::BFloat16 || is_floating(t); }

TEST(CudaKernels, EveryUnaryOpOnEveryDtype) {
  TSR_NEED_GPU();
  for (DType t : kReal)
    for (int op = 0; op < prim::kNumUnaryOps; ++op) {
      auto u = static_cast<prim::UnaryOp>(op);
      bool ok = t == DType::Bool ? u == prim::UnaryOp::Not
                                 : (is_integer(t) ? !unary_float_only(u) : u != prim::UnaryOp::Not);
      if (!ok) continue;
      prim::Unary p(u);
      double lo = u == prim::UnaryOp::ErfInv ? -0.99 : -3;
      Host x = random(t, {1000}, 1 + op, lo, -lo);
      DType ot = u == prim::UnaryOp::IsFinite ? DType::Bool : t;
      expect_same(p, {x}, {{{1000}, ot}}, std::string(p.name()) + " " + dtype_name(t));
    }
}

TEST(CudaKernels, EveryBinaryOpWithBroadcasting) {
  TSR_NEED_GPU();
  for (DType t : kReal)
    for (int op = 0; op < prim::kNumBinaryOps; ++op) {
      auto b = static_cast<prim::BinaryOp>(op);
      bool ok = t == DType::Bool ? (is_compare_op(b) || is_logical_op(b) ||
                                    b == prim::BinaryOp::Add || b == prim::BinaryOp::Mul ||
                                    b == prim::BinaryOp::Max || b == prim::BinaryOp::Min)
                                 : (is_integer(t) ? b != prim::BinaryOp::Atan2 : !is_logical_op(b));
      if (!ok) continue;
      prim::Binary p(b);
      DType ot = is_compare_op(b) ? DType::Bool : t;
      std::string name = std::string(p.name()) + " " + dtype_name(t);
      // Same shapes (with zeros: integer division by zero), a scalar, and a row broadcast.
      expect_same(p, {random(t, {8, 50}, 2), random(t, {8, 50}, 3)}, {{{8, 50}, ot}},
                  name + " same");
      expect_same(p, {random(t, {8, 50}, 4), random(t, {}, 5, 1, 3)}, {{{8, 50}, ot}},
                  name + " scalar");
      expect_same(p, {random(t, {8, 1}, 6), random(t, {1, 50}, 7)}, {{{8, 50}, ot}},
                  name + " outer");
    }
}

TEST(CudaKernels, ConvertEveryPair) {
  TSR_NEED_GPU();
  for (DType from : kReal)
    for (DType to : kReal) {
      prim::Convert p(to, false);
      Host x = random(from, {777}, 11, -300, 300);  // out of range for the small types
      expect_same(p, {x}, {{{777}, to}}, std::string(dtype_name(from)) + " -> " + dtype_name(to));
    }
}

TEST(CudaKernels, IntegerPowSelectClamp) {
  TSR_NEED_GPU();
  for (DType t : kReal) {
    if (t == DType::Bool) continue;
    for (int y : {0, 1, 2, 3, 7, -1, -2}) {
      prim::IntegerPow p(y);
      expect_same(p, {random(t, {300}, 12)}, {{{300}, t}}, "integer_pow " + std::to_string(y));
    }
    prim::Clamp c;
    expect_same(c, {random(t, {}, 13, -1, 0), random(t, {300}, 14), random(t, {}, 15, 0, 1)},
                {{{300}, t}}, std::string("clamp ") + dtype_name(t));
  }
  prim::SelectN s;
  Host which = make(DType::Int32, {500}, [](int64_t i) { return static_cast<double>(i % 5) - 1; });
  expect_same(s,
              {which, random(DType::Float32, {500}, 16), random(DType::Float32, {500}, 17),
               random(DType::Float32, {500}, 18)},
              {{{500}, DType::Float32}}, "select_n int32 3 cases");
  Host pred = random(DType::Bool, {500}, 19, 0, 2);
  expect_same(s, {pred, random(DType::BFloat16, {500}, 20), random(DType::BFloat16, {500}, 21)},
              {{{500}, DType::BFloat16}}, "select_n bool");
}

TEST(CudaKernels, ShapeOpsAndCreation) {
  TSR_NEED_GPU();
  for (DType t :
       {DType::Float32, DType::BFloat16, DType::Int64, DType::Bool}) {  // 4, 2, 8, 1 bytes
    Host x = random(t, {3, 4, 5}, 22);
    prim::Transpose tr({2, 0, 1});
    expect_same(tr, {x}, {{{5, 3, 4}, x.t.dtype}}, "transpose");
    prim::Rev rv({0, 2});
    expect_same(rv, {x}, {{{3, 4, 5}, x.t.dtype}}, "rev");
    prim::Slice sl({0, 1, 1}, {3, 4, 5}, {2, 1, 2});
    expect_same(sl, {x}, {{{2, 3, 2}, x.t.dtype}}, "slice");
  }
  for (DType t : {DType::Float32, DType::UInt8, DType::Float64}) {
    prim::Pad pd({1, -1}, {2, 3}, {0, 2});  // low, high, interior; a negative low crops
    expect_same(pd, {random(t, {3, 4}, 33), random(t, {}, 34)}, {{{6, 12}, t}},
                std::string("pad ") + dtype_name(t));
    prim::Concatenate cc(1);
    expect_same(cc, {random(t, {3, 2}, 35), random(t, {3, 5}, 36), random(t, {3, 1}, 37)},
                {{{3, 8}, t}}, std::string("concatenate ") + dtype_name(t));
    prim::Split sp({2, 5, 1}, 1);
    expect_same(sp, {random(t, {3, 8}, 38)}, {{{3, 2}, t}, {{3, 5}, t}, {{3, 1}, t}},
                std::string("split ") + dtype_name(t));
  }
  // Start indices of several dtypes, out of range on both sides (clamped), and a dim
  // covered whole (its index is ignored).
  for (DType t : {DType::Float32, DType::Int16}) {
    Host big = random(t, {6, 7, 5}, 39);
    Host i0 = make(DType::Int32, {}, [](int64_t) { return 4.0; });
    Host i1 = make(DType::Int64, {}, [](int64_t) { return -3.0; });
    Host i2 = make(DType::UInt8, {}, [](int64_t) { return 200.0; });
    prim::DynamicSlice ds({3, 4, 5});
    expect_same(ds, {big, i0, i1, i2}, {{{3, 4, 5}, t}},
                std::string("dynamic_slice ") + dtype_name(t), true);
    prim::DynamicUpdateSlice du;
    expect_same(du, {big, random(t, {2, 7, 3}, 44), i0, i1, i2}, {{{6, 7, 5}, t}},
                std::string("dynamic_update_slice ") + dtype_name(t), true);
  }
  prim::BroadcastInDim bc({4, 3, 5}, {1, 2}, std::nullopt);
  expect_same(bc, {random(DType::Float32, {3, 1}, 23)}, {{{4, 3, 5}, DType::Float32}},
              "broadcast_in_dim");
  for (DType t : kReal) {
    prim::Full f({7, 9}, t, 2.5, false, {});
    expect_same(f, {}, {{{7, 9}, t}}, std::string("full ") + dtype_name(t));
    prim::Iota io(t, {4, 6}, 1, {});
    if (t != DType::Bool) expect_same(io, {}, {{{4, 6}, t}}, std::string("iota ") + dtype_name(t));
  }
}

TEST(CudaKernels, Reductions) {
  TSR_NEED_GPU();
  using prim::ReduceKind;
  for (DType t : kReal)
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min,
                         ReduceKind::And, ReduceKind::Or}) {
      bool bits = k == ReduceKind::And || k == ReduceKind::Or;
      if (bits && float_like(t)) continue;
      for (std::vector<int> axes : {std::vector<int>{1}, {0, 2}, {0, 1, 2}}) {
        prim::Reduce p(k, axes);
        Shape out;
        Shape in{6, 70, 5};
        for (int d = 0; d < 3; ++d)
          if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(in[d]);
        double lo = k == ReduceKind::Prod ? 0.9 : -3, hi = k == ReduceKind::Prod ? 1.1 : 3;
        expect_same(
            p, {random(t, in, 24, lo, hi)}, {{out, t}},
            std::string(p.name()) + " " + dtype_name(t) + " axes " + std::to_string(axes.size()));
      }
    }
}

// Lines are scanned in the CPU's order: sums agree bit for bit.
TEST(CudaKernels, CumulativeScans) {
  TSR_NEED_GPU();
  using prim::CumKind;
  for (DType t : kReal)
    for (CumKind k :
         {CumKind::Sum, CumKind::Prod, CumKind::Max, CumKind::Min, CumKind::LogSumExp}) {
      if (k == CumKind::LogSumExp && !float_like(t)) continue;
      if (t == DType::Bool && (k == CumKind::Sum || k == CumKind::Prod)) continue;
      for (int axis : {0, 2})
        for (bool rev : {false, true}) {
          prim::Cumulative p(k, axis, rev);
          double lo = k == CumKind::Prod ? 0.9 : -3, hi = k == CumKind::Prod ? 1.1 : 3;
          expect_same(p, {random(t, {4, 3, 50}, 43, lo, hi)}, {{{4, 3, 50}, t}},
                      std::string(p.name()) + " " + dtype_name(t), k != CumKind::LogSumExp);
        }
    }
}

TEST(CudaKernels, ArgMaxArgMin) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::BFloat16, DType::Int8, DType::UInt64, DType::Bool})
    for (bool mx : {true, false})
      for (int axis : {0, 1, 2}) {
        prim::ArgReduce p(mx, axis, DType::Int32);
        Shape in{5, 33, 4}, out;
        for (int d = 0; d < 3; ++d)
          if (d != axis) out.push_back(in[d]);
        Host x = random(t, in, 42, -2, 2);  // small integers: ties, first index wins
        expect_same(p, {x}, {{out, DType::Int32}}, std::string(p.name()) + " " + dtype_name(t),
                    true);
      }
  // A NaN is the extreme for both, at its first position.
  Host nan =
      make(DType::Float32, {6}, [](int64_t i) { return i == 2 || i == 4 ? NAN : double(i); });
  prim::ArgReduce amax(true, 0, DType::Int32), amin(false, 0, DType::Int32);
  expect_same(amax, {nan}, {{{}, DType::Int32}}, "argmax NaN", true);
  expect_same(amin, {nan}, {{{}, DType::Int32}}, "argmin NaN", true);
}

TEST(CudaKernels, DotGeneral) {
  TSR_NEED_GPU();
  // [b, m, k] x [b, n, k] with the batch first and the contraction last (a transpose
  // on the right), and [k, m] x [k, n] (both transposed).
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32}) {
    prim::DotGeneral p1({{2}, {2}, {0}, {0}}, std::nullopt, t);
    expect_same(p1, {random(t, {3, 17, 33}, 25), random(t, {3, 9, 33}, 26)}, {{{3, 17, 9}, t}},
                std::string("bmk,bnk ") + dtype_name(t));
    prim::DotGeneral p2({{0}, {0}, {}, {}}, std::nullopt, t);
    expect_same(p2, {random(t, {40, 12}, 27), random(t, {40, 5}, 28)}, {{{12, 5}, t}},
                std::string("km,kn ") + dtype_name(t));
  }
  prim::DotGeneral mixed({{1}, {0}, {}, {}}, std::nullopt, DType::Float32);  // bf16 in, f32 out
  expect_same(mixed, {random(DType::BFloat16, {16, 64}, 29), random(DType::BFloat16, {64, 8}, 30)},
              {{{16, 8}, DType::Float32}}, "bf16 -> f32");
}

// Bit-identical to the CPU (shared threefry code, no FMA contraction), also for a
// block that is not at the origin (a device's shard of a bigger array).
TEST(CudaKernels, RandomBitsAreTheCpuBits) {
  TSR_NEED_GPU();
  Host key = make(DType::UInt32, {2}, [](int64_t i) { return i == 0 ? 1234567.0 : 89.0; });
  struct Case {
    prim::RandomDist dist;
    DType t;
  };
  for (Case c : {Case{prim::RandomDist::Bits, DType::UInt8},
                 {prim::RandomDist::Bits, DType::UInt16},
                 {prim::RandomDist::Bits, DType::UInt32},
                 {prim::RandomDist::Bits, DType::UInt64},
                 {prim::RandomDist::Uniform, DType::Float32},
                 {prim::RandomDist::Uniform, DType::Float64},
                 {prim::RandomDist::Uniform, DType::Float16},
                 {prim::RandomDist::Uniform, DType::BFloat16},
                 {prim::RandomDist::RandInt, DType::Int8},
                 {prim::RandomDist::RandInt, DType::Int32},
                 {prim::RandomDist::RandInt, DType::UInt64},
                 {prim::RandomDist::RandInt, DType::Int64}}) {
    prim::RandomBits p(c.dist, {64, 40}, c.t, -2.5, 7.25, -100, 1000, {});
    expect_same(p, {key}, {{{16, 40}, c.t}}, std::string(p.name()) + " " + dtype_name(c.t), true,
                {32, 0});  // rows 32..47 of the [64, 40] array
  }
  prim::Threefry2x32 tf;
  expect_same(
      tf, {key, random(DType::UInt32, {300}, 40, 0, 4e9), random(DType::UInt32, {300}, 41, 0, 4e9)},
      {{{300}, DType::UInt32}, {{300}, DType::UInt32}}, "threefry2x32", true);
}

TEST(CudaKernels, FusedChainMatchesTheCpuChain) {
  TSR_NEED_GPU();
  using Ref = FusedElementwise::Ref;
  const DType f32 = DType::Float32;
  auto m = [&](PrimPtr p, std::vector<Ref> ins, Ref o, std::vector<DType> it, DType ot) {
    FusedElementwise::Member x;
    x.prim = p;
    x.fn = find_kernel(p->name(), "cpu");
    x.ins = std::move(ins);
    x.outs = {o};
    for (DType t : it) x.blk_in.push_back({Shape{4096}, t});
    x.blk_out = {{Shape{4096}, ot}};
    x.tail_in = x.blk_in;
    x.tail_out = x.blk_out;
    return x;
  };
  const int64_t n = 4096 * 3;
  FusedElementwise f;
  f.n = n;
  f.block = 4096;
  f.tmp_bytes = {4096 * 4, 4096 * 4};
  f.members.push_back(m(std::make_shared<prim::Binary>(prim::BinaryOp::Mul),
                        {{Ref::Kind::In, 0, false, 4}, {Ref::Kind::In, 1, true, 4}},
                        {Ref::Kind::Tmp, 0, false, 4}, {f32, f32}, f32));
  f.members.push_back(m(std::make_shared<prim::Unary>(prim::UnaryOp::Tanh),
                        {{Ref::Kind::Tmp, 0, false, 4}}, {Ref::Kind::Tmp, 1, false, 4}, {f32},
                        f32));
  f.members.push_back(m(std::make_shared<prim::Convert>(DType::BFloat16, false),
                        {{Ref::Kind::Tmp, 1, false, 4}}, {Ref::Kind::Out, 0, false, 2}, {f32},
                        DType::BFloat16));
  Host x = random(f32, {n}, 31), s = random(f32, {}, 32);
  expect_same(f, {x, s}, {{{n}, DType::BFloat16}}, "mul tanh bf16");
}

// The parts are moved, not computed: bit for bit.
TEST(CudaKernels, ComplexParts) {
  TSR_NEED_GPU();
  for (DType z : {DType::Complex64, DType::Complex128}) {
    DType r = z == DType::Complex128 ? DType::Float64 : DType::Float32;
    std::string name = dtype_name(z);
    Host x = make_complex_host(z, {7, 33}, 50);
    prim::ComplexPart re(prim::PartKind::Real), im(prim::PartKind::Imag), cj(prim::PartKind::Conj);
    expect_same(re, {x}, {{{7, 33}, r}}, "real " + name, true);
    expect_same(im, {x}, {{{7, 33}, r}}, "imag " + name, true);
    expect_same(cj, {x}, {{{7, 33}, z}}, "conj " + name, true);
    prim::MakeComplex mk;
    expect_same(mk, {random(r, {7, 33}, 51), random(r, {7, 33}, 52)}, {{{7, 33}, z}},
                "complex " + name, true);
    expect_same(mk, {random(r, {7, 1}, 53), random(r, {}, 54)}, {{{7, 33}, z}},
                "complex broadcast " + name, true);
  }
}

// Indices out of range on both sides (every mode), and duplicates.
Host indices(Shape s, uint32_t seed, double lo, double hi) {
  return random(DType::Int32, std::move(s), seed, lo, hi);
}

TEST(CudaKernels, Gather) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::BFloat16, DType::Int64, DType::Bool, DType::Complex128})
    for (IndexMode m : {IndexMode::FillOrDrop, IndexMode::Clip, IndexMode::PromiseInBounds}) {
      std::string name = std::string(dtype_name(t)) + " mode " + std::to_string(int(m));
      Host x = is_complex(t) ? make_complex_host(t, {5, 7, 3}, 60) : random(t, {5, 7, 3}, 60);
      // x[i, j:j+2, :] for 4 x 6 index pairs: [4, 6, 2, 3].
      prim::Gather g({{2, 3}, {0}, {0, 1}, {}, {}}, {1, 2, 3}, m, 9.5, false, false, {});
      expect_same(g, {x, indices({4, 6, 2}, 61, -2, 8)}, {{{4, 6, 2, 3}, t}}, "gather " + name,
                  true);
      // Batching dims: row b of x reads x[b, idx[b, k]].
      Host y = random(t == DType::Complex128 ? DType::Float64 : t, {4, 10}, 62);
      prim::Gather gb({{}, {1}, {1}, {0}, {0}}, {1, 1}, m, -1, false, false, {});
      expect_same(gb, {y, indices({4, 5, 1}, 63, -1, 11)}, {{{4, 5}, y.t.dtype}},
                  "gather batched " + name, true);
    }
}

// Every combiner on every dtype, duplicates and dropped / clipped indices. Set, min,
// max, mul (in the CPU's order on the GPU) and the integer sums are exact; float sums
// are atomic (their order varies).
TEST(CudaKernels, Scatter) {
  TSR_NEED_GPU();
  std::vector<DType> types(std::begin(kReal), std::end(kReal));
  types.push_back(DType::Complex64);
  types.push_back(DType::Complex128);
  for (DType t : types)
    for (ScatterKind k : {ScatterKind::Set, ScatterKind::Add, ScatterKind::Sub, ScatterKind::Mul,
                          ScatterKind::Min, ScatterKind::Max})
      for (IndexMode m : {IndexMode::FillOrDrop, IndexMode::Clip}) {
        prim::Scatter p(k, {{1}, {0}, {0}, {}, {}}, m, false, false, {});
        std::string name =
            std::string(p.name()) + " " + dtype_name(t) + " mode " + std::to_string(int(m));
        auto host = [&](Shape s, uint32_t seed) {
          double lo = k == ScatterKind::Mul ? 0.5 : -3, hi = k == ScatterKind::Mul ? 1.5 : 3;
          return is_complex(t) ? make_complex_host(t, std::move(s), seed)
                               : random(t, std::move(s), seed, lo, hi);
        };
        bool exact = !float_like(t) && !is_complex(t);
        exact = exact || k == ScatterKind::Set || k == ScatterKind::Min || k == ScatterKind::Max ||
                (k == ScatterKind::Mul && !is_complex(t));
        // Half-type sums round at every step, in the atomics' order: a few ulps apart.
        bool half = t == DType::Float16 || t == DType::BFloat16;
        expect_same(p, {host({6, 5}, 70), indices({20, 1}, 71, -1, 7), host({20, 5}, 72)},
                    {{{6, 5}, t}}, name, exact, {}, half ? 5e-2 : -1);
      }
  // Overlapping windows: the last scatter position wins each element, as on the CPU.
  for (DType t : {DType::Int32, DType::Float16}) {
    prim::Scatter set(ScatterKind::Set, {{1}, {}, {0}, {}, {}}, IndexMode::Clip, false, false, {});
    expect_same(set, {random(t, {10}, 73), indices({8, 1}, 74, 0, 9), random(t, {8, 3}, 75)},
                {{{10}, t}}, std::string("scatter overlapping ") + dtype_name(t), true);
  }
}

// Small integers (many ties), NaN, infinities and both zeros.
Host sort_input(DType t, Shape s, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(0, 9);
  const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  bool fl = float_like(t);
  return make(t, std::move(s), [&](int64_t) {
    int r = u(g);
    return fl && r < 5 ? special[r] : static_cast<double>(u(g)) - 4;
  });
}

// Exact: the order is the CPU's (stable sorts, so full ties too).
TEST(CudaKernels, SortTopKSearchSorted) {
  TSR_NEED_GPU();
  for (DType t : kReal) {
    std::string name = dtype_name(t);
    for (int dim : {0, 1, 2}) {
      prim::Sort one(dim, true, 1);
      expect_same(one, {sort_input(t, {4, 37, 3}, 80)}, {{{4, 37, 3}, t}},
                  "sort " + name + " dim " + std::to_string(dim), true);
    }
    // Two keys and a payload (int32 positions: the permutation itself).
    prim::Sort two(1, true, 2);
    Host pos = make(DType::Int32, {3, 50}, [](int64_t i) { return static_cast<double>(i); });
    expect_same(two, {sort_input(t, {3, 50}, 81), sort_input(DType::Int8, {3, 50}, 82), pos},
                {{{3, 50}, t}, {{3, 50}, DType::Int8}, {{3, 50}, DType::Int32}},
                "sort 2 keys " + name, true);
    prim::TopK tk(7);
    expect_same(tk, {sort_input(t, {5, 40}, 83)}, {{{5, 7}, t}, {{5, 7}, DType::Int32}},
                "top_k " + name, true);
    // A sorted operand (sorted on the CPU) and queries with ties, NaN and zeros.
    prim::Sort s1(0, true, 1);
    Host sorted = sort_input(t, {60}, 84);
    sorted.bytes = run("cpu", s1, {sorted}, {sorted.t}, {})[0];
    for (bool right : {false, true}) {
      prim::SearchSorted ss(right);
      expect_same(ss, {sorted, sort_input(t, {9, 11}, 85)}, {{{9, 11}, DType::Int32}},
                  "searchsorted " + name + (right ? " right" : " left"), true);
    }
  }
}

// Strides, padding and both dilations, with a pass-through feature dim; the window
// positions walk their taps in the CPU's order, so every result is exact but
// select_and_scatter_add's atomic sums.
TEST(CudaKernels, WindowedReductionsAndPoolingGradients) {
  TSR_NEED_GPU();
  prim::Window w{
      {1, 3, 2, 1}, {1, 2, 1, 1}, {{0, 0}, {1, 1}, {0, 1}, {0, 0}}, {1, 1, 2, 1}, {1, 1, 2, 1}};
  const Shape in{2, 9, 5, 3};
  const Shape out = w.out_shape(in);
  for (DType t : kReal)
    for (prim::WindowOp op : {prim::WindowOp::Sum, prim::WindowOp::Max, prim::WindowOp::Min}) {
      prim::ReduceWindow p(op, w);
      expect_same(p, {sort_input(t, in, 90)}, {{out, t}},
                  std::string(p.name()) + " " + dtype_name(t), true);
    }
  for (DType st : {DType::Float32, DType::BFloat16, DType::Float64, DType::Float16})
    for (DType t : {DType::Float32, DType::Int8, DType::Bool, DType::BFloat16})
      for (prim::WindowOp sel : {prim::WindowOp::Max, prim::WindowOp::Min}) {
        std::string name = std::string(dtype_name(st)) + " by " + dtype_name(t) +
                           (sel == prim::WindowOp::Max ? " max" : " min");
        Host x = sort_input(t, in, 91);  // ties, NaN, infinities
        prim::SelectAndGatherAdd g(sel, w);
        expect_same(g, {random(st, in, 92), x}, {{out, st}}, "select_and_gather_add " + name, true);
        prim::SelectAndScatterAdd sc(sel, w);
        expect_same(sc, {random(st, out, 93), x}, {{in, st}}, "select_and_scatter_add " + name);
      }
}

// Every flag combination; a's other triangle holds values both kernels must ignore.
TEST(CudaKernels, TriangularSolve) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64}) {
    std::mt19937 g(95);
    std::uniform_real_distribution<double> u(-1, 1);
    Host am = make(t, {2, 5, 5}, [&](int64_t i) { return u(g) + ((i % 25) % 6 == 0 ? 5 : 0); });
    for (bool left : {true, false})
      for (bool lower : {true, false})
        for (bool trans : {true, false})
          for (bool unit : {true, false}) {
            prim::TriangularSolve p(left, lower, trans, unit);
            Shape bs = left ? Shape{2, 5, 3} : Shape{2, 3, 5};
            expect_same(p, {am, random(t, bs, 96)}, {{bs, t}},
                        std::string("triangular_solve ") + dtype_name(t) + (left ? " left" : "") +
                            (lower ? " lower" : "") + (trans ? " trans" : "") +
                            (unit ? " unit" : ""));
          }
  }
}

// Positive definite a a^T + n I, and one matrix that is not (NaN in the lower triangle
// on both); up to 16 x 16 the CPU's order, bit for bit.
TEST(CudaKernels, Cholesky) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64})
    for (int64_t n : {1, 5, 16, 40}) {
      std::mt19937 g(97);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> m(static_cast<size_t>(3 * n * n)), spd(m.size());
      for (double& v : m) v = u(g);
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = i == j ? static_cast<double>(n) : 0;
            for (int64_t k = 0; k < n; ++k) acc += m[(b * n + i) * n + k] * m[(b * n + j) * n + k];
            spd[(b * n + i) * n + j] = b == 2 ? -acc : acc;  // matrix 2: negative definite
          }
      Host x = make(t, {3, n, n}, [&](int64_t i) { return spd[static_cast<size_t>(i)]; });
      prim::Cholesky p;
      expect_same(p, {x}, {{{3, n, n}, t}},
                  std::string("cholesky ") + dtype_name(t) + " n " + std::to_string(n), n <= 16);
    }
}

// NHWC / HWIO specs with strides, padding (a negative side too), both dilations and
// both group counts. The CPU direct loop's order: exact but where the CPU runs oneDNN
// (float32, bfloat16).
TEST(CudaKernels, ConvGeneralDilated) {
  TSR_NEED_GPU();
  struct Case {
    std::string name;
    std::vector<int64_t> strides, lhs_dil, rhs_dil;
    std::vector<std::pair<int64_t, int64_t>> pad;
    int64_t fgc, bgc;
    Shape lhs, rhs;  // NHWC, HWIO
  };
  const std::vector<Case> cases = {
      {"grouped", {2, 1}, {1, 1}, {1, 2}, {{1, 1}, {0, 2}}, 2, 1, {2, 7, 6, 4}, {3, 2, 2, 6}},
      {"transposed", {1, 1}, {2, 1}, {1, 1}, {{1, 1}, {-1, 1}}, 1, 1, {2, 5, 6, 3}, {2, 3, 3, 4}},
      {"batch groups", {1, 2}, {1, 1}, {1, 1}, {{0, 0}, {1, 0}}, 1, 2, {4, 5, 5, 3}, {2, 2, 3, 4}},
  };
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32})
    for (const Case& c : cases) {
      prim::ConvParams p{
          c.strides, c.pad, c.lhs_dil, c.rhs_dil, {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}},
          c.fgc,     c.bgc};
      Shape os = p.out_shape(c.lhs, c.rhs);
      prim::ConvGeneralDilated conv(p, std::nullopt, std::nullopt);
      bool exact = t != DType::Float32 && t != DType::BFloat16;
      expect_same(conv, {random(t, c.lhs, 98), random(t, c.rhs, 99)}, {{os, t}},
                  "conv " + c.name + " " + dtype_name(t), exact);
    }
}

// Square, tall and wide matrices, and one with a zero column (a zero pivot); the
// pivots and permutations exactly (no near-ties among random candidates).
TEST(CudaKernels, Lu) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64})
    for (Shape s : {Shape{3, 6, 6}, Shape{2, 7, 4}, Shape{2, 4, 7}, Shape{2, 3, 0}}) {
      const int64_t m = s[1], n = s[2];
      Host x = random(t, s, 100, -1, 1);
      if (n > 1)  // matrix 0, column 1: zeros
        x = make(t, s, [&, v = as_double(x.t, x.bytes)](int64_t i) {
          return i < m * n && i % n == 1 ? 0.0 : v[static_cast<size_t>(i)];
        });
      prim::Lu p;
      expect_same(
          p, {x}, {{s, t}, {{s[0], std::min(m, n)}, DType::Int32}, {{s[0], m}, DType::Int32}},
          "lu " + std::string(dtype_name(t)) + " " + std::to_string(m) + "x" + std::to_string(n));
    }
}

// Square, tall and wide, reduced and full: LAPACK's sign convention (r's diagonal
// -sign(a's pivot) |column|), so q and r themselves agree, not only their product.
TEST(CudaKernels, Qr) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64})
    for (Shape s : {Shape{3, 5, 5}, Shape{2, 7, 4}, Shape{2, 4, 7}, Shape{1, 3, 0}})
      for (bool full : {false, true}) {
        const int64_t m = s[1], n = s[2], qc = full ? m : std::min(m, n);
        prim::Qr p(full);
        expect_same(p, {random(t, s, 101, -1, 1)}, {{{s[0], m, qc}, t}, {{s[0], qc, n}, t}},
                    "qr " + std::string(dtype_name(t)) + " " + std::to_string(m) + "x" +
                        std::to_string(n) + (full ? " full" : ""));
      }
}

// Jacobi rotations against LAPACK: the eigenvalues, and each eigenvector up to its sign
// (made positive at its largest component on both); a NaN anywhere gives NaN.
TEST(CudaKernels, Eigh) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64})
    for (int64_t n : {1, 4, 17})
      for (bool lower : {true, false}) {
        prim::Eigh p(lower);
        Host x = random(t, {3, n, n}, 102, -1, 1);  // one triangle read: any matrix will do
        std::vector<LocalType> outs = {{{3, n, n}, t}, {{3, n}, t}};
        auto cpu = run("cpu", p, {x}, outs, {}), gpu = run("cuda", p, {x}, outs, {});
        std::vector<double> cv = as_double(outs[0], cpu[0]), gv = as_double(outs[0], gpu[0]);
        std::vector<double> cw = as_double(outs[1], cpu[1]), gw = as_double(outs[1], gpu[1]);
        const double tol = t == DType::Float32 ? 1e-4 : 1e-10;
        std::string name = std::string("eigh ") + dtype_name(t) + " n " + std::to_string(n);
        for (size_t i = 0; i < cw.size(); ++i) EXPECT_NEAR(cw[i], gw[i], tol) << name;
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t j = 0; j < n; ++j) {
            auto sign = [&](const std::vector<double>& v) {
              int64_t big = 0;
              for (int64_t i = 0; i < n; ++i)
                if (std::fabs(v[(b * n + i) * n + j]) > std::fabs(v[(b * n + big) * n + j]))
                  big = i;
              return v[(b * n + big) * n + j] < 0 ? -1.0 : 1.0;
            };
            double sc = sign(cv), sg = sign(gv);
            for (int64_t i = 0; i < n; ++i)
              EXPECT_NEAR(sc * cv[(b * n + i) * n + j], sg * gv[(b * n + i) * n + j], tol) << name;
          }
      }
  prim::Eigh p(true);
  Host nan = make(DType::Float32, {2, 2}, [](int64_t i) { return i == 1 ? NAN : 1.0; });
  expect_same(p, {nan}, {{{2, 2}, DType::Float32}, {{2}, DType::Float32}}, "eigh NaN", true);
}

// One-sided Jacobi against LAPACK: the singular values, each (u column, vt row) pair
// up to one sign, and full_matrices' complement (any orthonormal completion is an
// answer) by u^T u = I and vt vt^T = I.
TEST(CudaKernels, Svd) {
  TSR_NEED_GPU();
  for (DType t : {DType::Float32, DType::Float64})
    for (Shape sh : {Shape{2, 5, 5}, Shape{2, 7, 4}, Shape{2, 4, 7}})
      for (bool full : {false, true})
        for (bool uv : {true, false}) {
          const int64_t nb = sh[0], m = sh[1], n = sh[2], k = std::min(m, n);
          const int64_t ku = full ? m : k, kv = full ? n : k;
          prim::Svd p(full, uv);
          Host x = random(t, sh, 103, -1, 1);
          std::vector<LocalType> outs = {{{nb, k}, t}};
          if (uv) outs.insert(outs.end(), {{{nb, m, ku}, t}, {{nb, kv, n}, t}});
          auto cpu = run("cpu", p, {x}, outs, {}), gpu = run("cuda", p, {x}, outs, {});
          const double tol = t == DType::Float32 ? 1e-4 : 1e-10;
          std::string name = std::string("svd ") + dtype_name(t) + " " + std::to_string(m) + "x" +
                             std::to_string(n) + (full ? " full" : "") + (uv ? " uv" : "");
          std::vector<double> cs = as_double(outs[0], cpu[0]), gs = as_double(outs[0], gpu[0]);
          for (size_t i = 0; i < cs.size(); ++i) EXPECT_NEAR(cs[i], gs[i], tol) << name;
          if (!uv) continue;
          std::vector<double> cu = as_double(outs[1], cpu[1]), gu = as_double(outs[1], gpu[1]);
          std::vector<double> cv = as_double(outs[2], cpu[2]), gv = as_double(outs[2], gpu[2]);
          for (int64_t b = 0; b < nb; ++b) {
            const double* u0 = cu.data() + b * m * ku;
            const double* u1 = gu.data() + b * m * ku;
            const double* v0 = cv.data() + b * kv * n;
            const double* v1 = gv.data() + b * kv * n;
            for (int64_t j = 0; j < k; ++j) {
              auto sign = [&](const double* u) {
                int64_t big = 0;
                for (int64_t i = 0; i < m; ++i)
                  if (std::fabs(u[i * ku + j]) > std::fabs(u[big * ku + j])) big = i;
                return u[big * ku + j] < 0 ? -1.0 : 1.0;
              };
              double s0 = sign(u0), s1 = sign(u1);
              for (int64_t i = 0; i < m; ++i)
                EXPECT_NEAR(s0 * u0[i * ku + j], s1 * u1[i * ku + j], tol) << name << " u";
              for (int64_t i = 0; i < n; ++i)
                EXPECT_NEAR(s0 * v0[j * n + i], s1 * v1[j * n + i], tol) << name << " vt";
            }
            for (int64_t p0 = 0; p0 < ku; ++p0)
              for (int64_t q = 0; q < ku; ++q) {
                double d = 0;
                for (int64_t i = 0; i < m; ++i) d += u1[i * ku + p0] * u1[i * ku + q];
                EXPECT_NEAR(d, p0 == q ? 1.0 : 0.0, tol) << name << " u^T u";
              }
            for (int64_t p0 = 0; p0 < kv; ++p0)
              for (int64_t q = 0; q < kv; ++q) {
                double d = 0;
                for (int64_t i = 0; i < n; ++i) d += v1[p0 * n + i] * v1[q * n + i];
                EXPECT_NEAR(d, p0 == q ? 1.0 : 0.0, tol) << name << " vt vt^T";
              }
          }
        }
}

// Even and odd lengths over one and two axes, every transform type; the GPU's direct
// sums against KISS FFT, to rounding.
TEST(CudaKernels, Fft) {
  TSR_NEED_GPU();
  using tsr::fft::FftType;
  for (DType z : {DType::Complex64, DType::Complex128}) {
    DType r = z == DType::Complex128 ? DType::Float64 : DType::Float32;
    std::string name = dtype_name(z);
    for (Shape s : {Shape{3, 8, 6}, Shape{2, 5, 7}})
      for (Shape lengths : {Shape{s[2]}, Shape{s[1], s[2]}}) {
        std::string tag = name + " " + std::to_string(s[1]) + "x" + std::to_string(s[2]) + " " +
                          std::to_string(lengths.size()) + " axes";
        for (FftType t : {FftType::FFT, FftType::IFFT}) {
          prim::Fft p(t, lengths);
          expect_same(p, {make_complex_host(z, s, 104)}, {{s, z}},
                      std::string(t == FftType::FFT ? "fft " : "ifft ") + tag);
        }
        Shape half = s;
        half[2] = s[2] / 2 + 1;
        prim::Fft rf(FftType::RFFT, lengths);
        expect_same(rf, {random(r, s, 105)}, {{half, z}}, "rfft " + tag);
        prim::Fft irf(FftType::IRFFT, lengths);
        expect_same(irf, {make_complex_host(z, half, 106)}, {{s, r}}, "irfft " + tag);
      }
  }
}

}  // namespace
}  // namespace tsr::detail::cuda
