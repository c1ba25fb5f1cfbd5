// The fused-chain code generator and its NVRTC compile (no GPU needed for either).
#include "tsr/backends/cuda/fusion_codegen.h"

#include <nvrtc.h>

#include <map>
#include <memory>
#include <string>

#include "tsr/backends/cuda/nvrtc_headers.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"

namespace tsr::detail::cuda {
namespace {

using Ref = FusedElementwise::Ref;

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// The element type in memory.
std::string storage_type(DType t) { return is_half(t) ? "uint16_t" : cuda_compute_type(t); }

// An expression of dtype t's compute type that rounds `e` (a float) to t when t is a
// half type: a half value between ops is exactly what the unfused chain stores.
std::string rounded(DType t, const std::string& e) {
  if (t == DType::Float16) return "d::half_bits_to_float(d::float_to_half_bits(" + e + "))";
  if (t == DType::BFloat16) return "d::bf16_bits_to_float(d::float_to_bf16_bits(" + e + "))";
  return e;
}

// As the CPU's convert_typed: wide sources reach a half type rounded to odd first.
bool wide_source(DType t) {
  return t == DType::Float64 || t == DType::Int32 || t == DType::UInt32 || t == DType::Int64 ||
         t == DType::UInt64;
}

std::string convert_expr(DType from, DType to, const std::string& v) {
  if (from == to) return v;
  if (is_half(to)) {
    std::string f = wide_source(from) ? "d::round_to_odd_float(static_cast<double>(" + v + "))"
                                      : "d::ops::cast<float>(" + v + ")";
    return rounded(to, f);
  }
  return std::string("d::ops::cast<") + cuda_compute_type(to) + ">(" + v + ")";
}

std::string ref_name(const Ref& r) {
  switch (r.kind) {
    case Ref::Kind::In:
      return "in" + std::to_string(r.index);
    case Ref::Kind::Out:
      return "out" + std::to_string(r.index);
    case Ref::Kind::Tmp:
      break;
  }
  return "tmp" + std::to_string(r.index);
}

// The expression one member computes from its operands' names.
std::string member_expr(const FusedElementwise::Member& m, const std::vector<std::string>& args) {
  const Primitive& p = *m.prim;
  DType in = m.blk_in[0].dtype, out = m.blk_out[0].dtype;
  std::string e;
  if (const auto* u = dynamic_cast<const prim::Unary*>(&p)) {
    e = "d::unary_apply<p::UnaryOp(" + std::to_string(static_cast<int>(u->op())) + ")>(" + args[0] +
        ")";
  } else if (const auto* b = dynamic_cast<const prim::Binary*>(&p)) {
    e = "d::binary_apply<p::BinaryOp(" + std::to_string(static_cast<int>(b->op())) + ")>(" +
        args[0] + ", " + args[1] + ")";
  } else if (const auto* ip = dynamic_cast<const prim::IntegerPow*>(&p)) {
    e = "d::ops::integer_pow(" + args[0] + ", " + std::to_string(ip->y()) + ")";
  } else if (dynamic_cast<const prim::Convert*>(&p)) {
    return convert_expr(in, out, args[0]);
  } else {
    throw RuntimeError(std::string("[fused_elementwise] no CUDA code for member '") + p.name() +
                       "'. Got it in a fused chain; expected unary, binary, integer_pow or "
                       "convert_element_type (runtime/fusion.cpp). Report this as a Tessera bug.");
  }
  return rounded(out, e);
}

}  // namespace

const char* cuda_compute_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "int8_t";
    case DType::Int16:
      return "int16_t";
    case DType::Int32:
      return "int32_t";
    case DType::Int64:
      return "int64_t";
    case DType::UInt8:
      return "uint8_t";
    case DType::UInt16:
      return "uint16_t";
    case DType::UInt32:
      return "uint32_t";
    case DType::UInt64:
      return "uint64_t";
    case DType::Float64:
      return "double";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
      return "float";
    case DType::Complex64:
    case DType::Complex128:
      break;
  }
  // The fusion pass leaves complex steps unfused (runtime/fusion.cpp).
  throw RuntimeError(std::string("[fused_elementwise] no CUDA code for dtype ") + dtype_name(t) +
                     ". Got a fused chain with it; expected the fusion pass to leave complex "
                     "steps unfused. Report this as a Tessera bug.");
}

std::string fused_source(const FusedElementwise& f, const std::vector<LocalType>& in,
                         const std::vector<LocalType>& out) {
  std::string s =
      "#include \"tsr/core/half_bits.h\"\n"
      "#include \"tsr/backends/common/elementwise_apply.h\"\n"
      "namespace d = tsr::detail;\n"
      "namespace p = tsr::prim;\n"
      "extern \"C\" __global__ void ";
  s += kFusedEntry;
  s += "(";
  for (size_t k = 0; k < in.size(); ++k)
    s += "const " + storage_type(in[k].dtype) + "* __restrict__ x" + std::to_string(k) + ", ";
  for (size_t k = 0; k < out.size(); ++k)
    s += storage_type(out[k].dtype) + "* __restrict__ y" + std::to_string(k) + ", ";
  s += "long long n) {\n"
       "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
       "       i += (long long)gridDim.x * blockDim.x) {\n";
  // Inputs, loaded once (scalars from element 0).
  std::map<int, bool> scalar_in;
  for (const auto& m : f.members)
    for (const Ref& r : m.ins)
      if (r.kind == Ref::Kind::In) scalar_in[r.index] = r.scalar;
  for (const auto& [k, scalar] : scalar_in) {
    DType t = in[static_cast<size_t>(k)].dtype;
    std::string x = "x" + std::to_string(k) + (scalar ? "[0]" : "[i]");
    std::string v = t == DType::Float16    ? "d::half_bits_to_float(" + x + ")"
                    : t == DType::BFloat16 ? "d::bf16_bits_to_float(" + x + ")"
                                           : x;
    s += "    const " + std::string(cuda_compute_type(t)) + " in" + std::to_string(k) + " = " + v +
         ";\n";
  }
  // Members in program order, each into a register.
  for (const auto& m : f.members) {
    std::vector<std::string> args;
    for (const Ref& r : m.ins) args.push_back(ref_name(r));
    DType t = m.blk_out[0].dtype;
    s += "    const " + std::string(cuda_compute_type(t)) + " " + ref_name(m.outs[0]) + " = " +
         member_expr(m, args) + ";\n";
  }
  // Outputs, stored.
  for (size_t k = 0; k < out.size(); ++k) {
    DType t = out[k].dtype;
    std::string v = "out" + std::to_string(k);
    std::string st = t == DType::Float16    ? "d::float_to_half_bits(" + v + ")"
                     : t == DType::BFloat16 ? "d::float_to_bf16_bits(" + v + ")"
                                            : v;
    s += "    y" + std::to_string(k) + "[i] = " + st + ";\n";
  }
  s += "  }\n}\n";
  return s;
}

NvrtcResult nvrtc_compile(const std::string& source, int arch) {
  const auto& headers = nvrtc_headers();
  std::vector<const char*> texts, names;
  for (const auto& h : headers) {
    texts.push_back(h.text);
    names.push_back(h.name);
  }
  nvrtcProgram prog = nullptr;
  NvrtcResult r;
  nvrtcResult st = nvrtcCreateProgram(&prog, source.c_str(), "tsr_fused.cu",
                                      static_cast<int>(texts.size()), texts.data(), names.data());
  if (st != NVRTC_SUCCESS) {
    r.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(st);
    return r;
  }
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::string gpu = "--gpu-architecture=compute_" + std::to_string(arch);
  // --fmad=false: a * b + c rounds twice, as in the CPU build (cmake/Cuda.cmake).
  const char* opts[] = {gpu.c_str(), "-std=c++20", "--device-as-default-execution-space",
                        "--fmad=false"};
  st = nvrtcCompileProgram(prog, 4, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    r.log.resize(log_size);
    nvrtcGetProgramLog(prog, r.log.data());
    r.log.resize(log_size - 1);
  }
  if (st != NVRTC_SUCCESS) return r;
  size_t ptx_size = 0;
  nvrtcGetPTXSize(prog, &ptx_size);
  r.ptx.resize(ptx_size);
  nvrtcGetPTX(prog, r.ptx.data());
  if (!r.ptx.empty() && r.ptx.back() == '\0') r.ptx.pop_back();
  r.ok = true;
  return r;
}

}  // namespace tsr::detail::cuda
