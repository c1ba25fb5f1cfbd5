#pragma once
// jit's fused elementwise chains on CUDA: one kernel per chain, written as CUDA C++
// at lowering time and compiled by NVRTC, so k elementwise ops read and write memory
// once. Each element is computed by the scalar headers the CPU kernels also use
// (embedded in the library: nvrtc_headers.h); a value of a half dtype is rounded to
// it after every op, so the fused result equals the unfused chain's bit for bit.
// Code generation and NVRTC need no GPU, so they are tested on every machine.
#include <string>
#include <vector>

#include "tsr/backends/fused.h"
#include "tsr/backends/kernel.h"

namespace tsr::detail::cuda {

/** The name of the generated kernel's entry point. */
inline constexpr const char* kFusedEntry = "tsr_fused";

/** The CUDA C++ type a value of dtype t computes in between ops ("float" for the half
 *  types, "int8_t", ...); RuntimeError for complex, which the fusion pass never fuses. */
const char* cuda_compute_type(DType t);

/** CUDA C++ of one fused chain: `extern "C" __global__ void tsr_fused(ins..., outs...,
 *  long long n)`, one grid-stride loop over the chain's n elements (scalar inputs
 *  read element 0). `in` / `out` are the fused step's local types. */
std::string fused_source(const FusedElementwise& f, const std::vector<LocalType>& in,
                         const std::vector<LocalType>& out);

/** What NVRTC made of a source: the PTX, or the log of a failed compile. */
struct NvrtcResult {
  bool ok = false; /**< compiled */
  std::string ptx; /**< the PTX when ok */
  std::string log; /**< NVRTC's log (errors when not ok) */
};

/** Compiles `source` for `arch` (a compute capability as 90 for sm_90) with the
 *  embedded scalar headers; runs without a GPU. */
NvrtcResult nvrtc_compile(const std::string& source, int arch);

}  // namespace tsr::detail::cuda
