// The CUDA backend's host side, on every machine (no GPU needed): discovery without
// a driver, launch geometry, broadcast strides, the kernel table's coverage, and the
// fused-chain code generator compiled by NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tsr/backends/common/elementwise_apply.h"
#include "tsr/backends/common/gather_scatter_build.h"
#include "tsr/backends/common/sort_ops.h"
#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/backends/cuda/fusion_codegen.h"
#include "tsr/backends/cuda/nvrtc_headers.h"
#include "tsr/comm/backends.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"
#include "tsr/prims/gather_scatter.h"

namespace tsr::detail::cuda {
namespace {

// Primitives with a CPU kernel and no CUDA kernel yet (issue 27). The coverage test
// fails when one of these gains a CUDA kernel (take it off the list) and when a CPU
// kernel is added without either a CUDA kernel or an entry here.
const std::set<std::string> kPending = {};

TEST(CudaHost, BuiltWithCuda) {
  EXPECT_TRUE(cuda_is_available());
  // NCCL is linked when the toolkit has it (cmake/Cuda.cmake); either answer is a bool
  // that must not need a GPU to compute.
  std::printf("NCCL backend: %s\n", nccl_is_available() ? "on" : "off");
}

TEST(CudaHost, DiscoveryWithoutAGpuIsZeroNotAnError) {
  int n = gpu_count();  // never throws, with or without a driver
  EXPECT_GE(n, 0);
  if (n == 0) {
    EXPECT_NE(std::string(no_gpu_reason()), "");
  }
  EXPECT_GE(virtual_devices_per_gpu(), 1);
}

TEST(CudaHost, LaunchGeometry) {
  Launch l = launch_1d(0);
  EXPECT_EQ(l.blocks, 1u);  // a launch is valid even for no elements
  l = launch_1d(1000, 256);
  EXPECT_EQ(l.blocks, 4u);
  EXPECT_EQ(l.threads, 256u);
  l = launch_1d(int64_t{1} << 40, 256, 65536);  // grid-stride beyond the cap
  EXPECT_EQ(l.blocks, 65536u);
  l = launch_1d(513, 0);  // a zero block size is clamped, not divided by
  EXPECT_EQ(l.threads, 1u);
  EXPECT_EQ(l.blocks, 513u);
}

TEST(CudaHost, BroadcastStrides) {
  Shape out{2, 3, 4}, x{2, 1, 4}, y{};
  Strides st = broadcast_strides(out, {&x, &y});
  ASSERT_EQ(st.rank, 3);
  EXPECT_EQ(st.in[0][0], 4);  // x is [2, 1, 4]: strides 4, -, 1
  EXPECT_EQ(st.in[0][1], 0);
  EXPECT_EQ(st.in[0][2], 1);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(st.in[1][d], 0);  // a scalar reads element 0
  Shape big(17, 1);
  EXPECT_THROW(broadcast_strides(big, {&big}), NotImplementedError);
}

TEST(CudaHost, EveryCpuKernelHasACudaKernelOrIsPending) {
  std::vector<std::string> missing, stale;
  for (const auto& name : kernel_names("cpu")) {
    bool has = has_kernel(name.c_str(), "cuda");
    if (!has && !kPending.count(name)) missing.push_back(name);
    if (has && kPending.count(name)) stale.push_back(name);
  }
  for (const auto& name : kPending)
    if (!has_kernel(name.c_str(), "cpu")) stale.push_back(name + " (no CPU kernel)");
  EXPECT_TRUE(missing.empty()) << "CPU kernels with no CUDA kernel and not pending: "
                               << ::testing::PrintToString(missing);
  EXPECT_TRUE(stale.empty()) << "pending entries to remove: " << ::testing::PrintToString(stale);
  // The count the closing note quotes.
  size_t cpu = kernel_names("cpu").size(), cuda = kernel_names("cuda").size();
  std::printf("CUDA kernels: %zu of %zu CPU kernel names (%zu pending)\n", cuda, cpu,
              kPending.size());
}

// Platform limits refuse when a step is lowered, never in a kernel: complex only on the
// CUDA kernels that move or compute it, at most kMaxDims dims.
TEST(CudaHost, KernelCapsRefuseWhatTheCudaKernelsCannotTake) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const NotImplementedError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(msg([] { check_kernel_caps("add", "cuda", {DType::Complex64}, {1}); }),
            "[add] complex64 is not supported by add on cuda devices yet. Got a complex64 operand "
            "or result; expected a real dtype on cuda devices. Run this step on CPU devices "
            "(tsr::device_put(x, tsr::devices(tsr::Platform::CPU)[0])) or work on the real and "
            "imaginary parts (tsr::real, tsr::imag).");
  EXPECT_NO_THROW(check_kernel_caps("add", "cpu", {DType::Complex64}, {1}));
  for (const char* ok : {"transpose", "gather", "scatter_add", "fft", "real", "select_n"})
    EXPECT_NO_THROW(check_kernel_caps(ok, "cuda", {DType::Complex128, DType::Int32}, {2, 1})) << ok;
  for (const char* no : {"dot_general", "reduce_sum", "cumsum", "exp", "iota"})
    EXPECT_NE(msg([&] { check_kernel_caps(no, "cuda", {DType::Complex64}, {2}); }), "(no error)")
        << no;
  EXPECT_NE(msg([] { check_kernel_caps("add", "cuda", {DType::Float32}, {17}); })
                .find("[add] an operand or result of rank 17 is too many dims for add on cuda "
                      "devices. Got rank 17; expected at most 16."),
            std::string::npos);
  EXPECT_NO_THROW(check_kernel_caps("add", "cuda", {DType::Float32}, {16}));
  EXPECT_NE(msg([] { check_kernel_caps("gather", "cpu", {DType::Float32}, {65}); }), "(no error)");
  // Every CUDA kernel has caps (set where it is registered).
  for (const auto& name : kernel_names("cuda"))
    EXPECT_EQ(kernel_caps(name.c_str(), "cuda").max_rank, cuda::kMaxDims) << name;
}

TEST(CudaHost, EmbeddedHeadersAreTheSources) {
  std::set<std::string> names;
  for (const auto& h : nvrtc_headers()) {
    names.insert(h.name);
    EXPECT_NE(std::string(h.text).find("#pragma once"), std::string::npos) << h.name;
  }
  for (const char* n : {"tsr/core/hd.h", "tsr/core/half_bits.h", "tsr/backends/common/scalar_ops.h",
                        "tsr/prims/elementwise_ops.h", "tsr/backends/common/elementwise_apply.h"})
    EXPECT_TRUE(names.count(n)) << n;
}

// ---- the fused-chain code generator, compiled by NVRTC (no GPU needed)

using Ref = FusedElementwise::Ref;

Ref in(int k, DType t, bool scalar = false) {
  return {Ref::Kind::In, k, scalar, static_cast<size_t>(itemsize(t))};
}
Ref tmp(int k, DType t) { return {Ref::Kind::Tmp, k, false, static_cast<size_t>(itemsize(t))}; }
Ref out(int k, DType t) { return {Ref::Kind::Out, k, false, static_cast<size_t>(itemsize(t))}; }

FusedElementwise::Member member(PrimPtr p, std::vector<Ref> ins, Ref o, std::vector<DType> in_t,
                                DType out_t) {
  FusedElementwise::Member m;
  m.prim = std::move(p);
  m.ins = std::move(ins);
  m.outs = {o};
  for (DType t : in_t) m.blk_in.push_back({Shape{4096}, t});
  m.blk_out = {{Shape{4096}, out_t}};
  return m;
}

// y0 = bf16(exp(x0 * s1) + x0) and y1 = (x0 * s1 > 0): a scalar input, a temporary
// used twice, a conversion to a half type and a comparison output.
struct Chain {
  FusedElementwise f;
  std::vector<LocalType> in, out;
};
Chain sample_chain() {
  using prim::Binary;
  using prim::BinaryOp;
  using prim::Unary;
  using prim::UnaryOp;
  Chain c;
  const DType f32 = DType::Float32;
  c.f.n = 1 << 20;
  c.f.members.push_back(member(std::make_shared<Binary>(BinaryOp::Mul),
                               {in(0, f32), in(1, f32, true)}, tmp(0, f32), {f32, f32}, f32));
  c.f.members.push_back(
      member(std::make_shared<Unary>(UnaryOp::Exp), {tmp(0, f32)}, tmp(1, f32), {f32}, f32));
  c.f.members.push_back(member(std::make_shared<Binary>(BinaryOp::Add), {tmp(1, f32), in(0, f32)},
                               tmp(2, f32), {f32, f32}, f32));
  c.f.members.push_back(member(std::make_shared<prim::Convert>(DType::BFloat16, false),
                               {tmp(2, f32)}, out(0, DType::BFloat16), {f32}, DType::BFloat16));
  c.f.members.push_back(
      member(std::make_shared<prim::IntegerPow>(3), {tmp(0, f32)}, tmp(3, f32), {f32}, f32));
  c.f.members.push_back(member(std::make_shared<Binary>(BinaryOp::Gt),
                               {tmp(3, f32), in(1, f32, true)}, out(1, DType::Bool), {f32, f32},
                               DType::Bool));
  c.in = {{Shape{1 << 20}, f32}, {Shape{}, f32}};
  c.out = {{Shape{1 << 20}, DType::BFloat16}, {Shape{1 << 20}, DType::Bool}};
  return c;
}

TEST(CudaFusion, SourceReadsEachInputOnceAndStoresEachOutput) {
  Chain c = sample_chain();
  std::string src = fused_source(c.f, c.in, c.out);
  EXPECT_NE(
      src.find("extern \"C\" __global__ void tsr_fused(const float* __restrict__ x0, "
               "const float* __restrict__ x1, uint16_t* __restrict__ y0, bool* __restrict__ y1, "
               "long long n)"),
      std::string::npos)
      << src;
  EXPECT_NE(src.find("const float in1 = x1[0];"), std::string::npos) << src;  // the scalar
  EXPECT_NE(src.find("y0[i] = d::float_to_bf16_bits(out0);"), std::string::npos) << src;
  EXPECT_NE(src.find("y1[i] = out1;"), std::string::npos) << src;
  // The bf16 result is rounded where it is made, as the unfused convert stores it.
  EXPECT_NE(src.find("d::bf16_bits_to_float(d::float_to_bf16_bits(d::ops::cast<float>(tmp2)))"),
            std::string::npos)
      << src;
  // Deterministic: the compile cache is keyed by this text.
  EXPECT_EQ(src, fused_source(c.f, c.in, c.out));
}

TEST(CudaFusion, NvrtcCompilesTheChainForHopperAndAmpere) {
  Chain c = sample_chain();
  std::string src = fused_source(c.f, c.in, c.out);
  for (int arch : {80, 90}) {
    NvrtcResult r = nvrtc_compile(src, arch);
    ASSERT_TRUE(r.ok) << r.log << "\n" << src;
    EXPECT_NE(r.ptx.find(".entry tsr_fused"), std::string::npos);
    EXPECT_NE(r.ptx.find(".target sm_" + std::to_string(arch)), std::string::npos);
  }
}

TEST(CudaFusion, NvrtcReportsErrorsWithItsLog) {
  NvrtcResult r = nvrtc_compile("extern \"C\" __global__ void k() { undefined_name(); }", 90);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_name"), std::string::npos) << r.log;
}

// Every unary and binary op the rules accept, on every real dtype, through the
// embedded scalar headers under NVRTC: the fused kernels can meet any of them.
TEST(CudaFusion, NvrtcCompilesEveryElementwiseOpOnEveryDtype) {
  const DType dts[] = {DType::Bool,   DType::Int8,    DType::Int16,    DType::Int32,
                       DType::Int64,  DType::UInt8,   DType::UInt16,   DType::UInt32,
                       DType::UInt64, DType::Float16, DType::BFloat16, DType::Float32,
                       DType::Float64};
  std::string src =
      "#include \"tsr/core/half_bits.h\"\n#include \"tsr/backends/common/elementwise_apply.h\"\n"
      "namespace d = tsr::detail;\nnamespace p = tsr::prim;\n";
  int kernels = 0;
  auto ctype = [](DType t) { return std::string(cuda_compute_type(t)); };
  for (DType t : dts) {
    std::string c = ctype(t);
    bool is_bool = t == DType::Bool, is_int = is_integer(t), is_float = !is_bool && !is_int;
    for (int op = 0; op < prim::kNumUnaryOps; ++op) {
      auto u = static_cast<prim::UnaryOp>(op);
      bool ok = is_bool ? u == prim::UnaryOp::Not
                        : (is_int ? !unary_float_only(u) : u != prim::UnaryOp::Not);
      if (!ok) continue;
      src += "extern \"C\" __global__ void u" + std::to_string(kernels++) + "(const " + c +
             "* x, " + (u == prim::UnaryOp::IsFinite ? std::string("bool") : c) +
             "* y) { y[0] = d::unary_apply<p::UnaryOp(" + std::to_string(op) + ")>(x[0]); }\n";
    }
    for (int op = 0; op < prim::kNumBinaryOps; ++op) {
      auto b = static_cast<prim::BinaryOp>(op);
      bool ok = is_bool ? (is_compare_op(b) || is_logical_op(b) || b == prim::BinaryOp::Add ||
                           b == prim::BinaryOp::Mul || b == prim::BinaryOp::Max ||
                           b == prim::BinaryOp::Min)
                        : (is_int ? b != prim::BinaryOp::Atan2 : !is_logical_op(b));
      if (!ok) continue;
      src += "extern \"C\" __global__ void b" + std::to_string(kernels++) + "(const " + c +
             "* x, " + (is_compare_op(b) ? std::string("bool") : c) +
             "* y) { y[0] = d::binary_apply<p::BinaryOp(" + std::to_string(op) +
             ")>(x[0], x[1]); }\n";
    }
    if (!is_bool)
      src += "extern \"C\" __global__ void p" + std::to_string(kernels++) + "(const " + c +
             "* x, " + c + "* y) { y[0] = d::ops::integer_pow(x[0], -3); }\n";
    for (DType to : dts)
      src += "extern \"C\" __global__ void c" + std::to_string(kernels++) + "(const " + c +
             "* x, " + ctype(to) + "* y) { y[0] = d::ops::cast<" + ctype(to) + ">(x[0]); }\n";
    (void)is_float;
  }
  NvrtcResult r = nvrtc_compile(src, 90);
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_GT(kernels, 400);
}

// The CUDA sort orders sort_key_bits; the CPU sort compares with sort_less. They
// must be one order, with ties exactly where sort_less has them.
template <typename K>
void expect_keys_follow_sort_less(const std::vector<K>& v) {
  for (K a : v)
    for (K b : v) {
      EXPECT_EQ(sort_less(a, b), sort_key_bits(a) < sort_key_bits(b)) << +a << " " << +b;
      EXPECT_EQ(!sort_less(a, b) && !sort_less(b, a), sort_key_bits(a) == sort_key_bits(b))
          << +a << " " << +b;
    }
}

TEST(CudaHost, SortKeyBitsAreTheSortOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  std::vector<double> d = {nan,    -nan,    inf,   -inf,   0.0, -0.0, 1.0, -1.0,
                           1e-310, -1e-310, 1e308, -1e308, 0.5, 2.5,  -2.5};
  expect_keys_follow_sort_less(d);
  std::vector<float> f;
  for (double x : d) f.push_back(static_cast<float>(x));
  expect_keys_follow_sort_less(f);
  expect_keys_follow_sort_less(std::vector<int64_t>{INT64_MIN, -5, -1, 0, 1, 7, INT64_MAX});
  expect_keys_follow_sort_less(std::vector<int8_t>{-128, -1, 0, 1, 127});
  expect_keys_follow_sort_less(std::vector<uint64_t>{0, 1, 1ull << 63, ~0ull});
  expect_keys_follow_sort_less(std::vector<uint16_t>{0, 1, 65535});
  expect_keys_follow_sort_less(std::vector<bool>{false, true});
}

// The shared gather plan holds the CPU kernel's ranks (64); the CUDA plan (kernel
// parameters) 16 dims, and says so. A rank-20 gather of rows 2 and 0 of [3, 1 x 18, 4].
TEST(CudaHost, GatherPlansTakeTheCpuRanks) {
  Shape os(20, 1), is{2, 1}, outs(20, 1), slice(20, 1);
  os[0] = 3;
  os[19] = 4;
  outs[0] = 2;
  outs[19] = 4;
  slice[19] = 4;
  std::vector<int> offset;
  for (int d = 1; d < 20; ++d) offset.push_back(d);
  prim::Gather g({offset, {0}, {0}, {}, {}}, slice, IndexMode::Clip, 0, false, false, {});
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  std::vector<int32_t> idx = {2, 0};
  std::vector<float> out(8, -1);
  std::vector<LocalType> in = {{os, DType::Float32}, {is, DType::Int32}},
                         ot = {{outs, DType::Float32}};
  std::vector<Shape> origins = {Shape(20, 0), Shape(2, 0)}, globals = {os, is};
  Shape out_origin(20, 0);
  const void* ip[] = {x.data(), idx.data()};
  void* op[] = {out.data()};
  KernelArgs a;
  a.prim = &g;
  a.in = &in;
  a.out = &ot;
  a.in_ptr = ip;
  a.out_ptr = op;
  a.out_origin = &out_origin;
  a.in_origin = origins.data();
  a.in_global = globals.data();
  find_kernel("gather", "cpu")(a);
  EXPECT_EQ(out, (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_THROW(gather_plan(a), NotImplementedError);
}

}  // namespace
}  // namespace tsr::detail::cuda
