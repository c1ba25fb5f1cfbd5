// The CUDA fused_elementwise kernel: the chain's generated source, compiled once per
// distinct text by NVRTC for this GPU's architecture, loaded with the runtime's
// library API (no driver-API link, so the library loads on machines without a GPU),
// and launched over the chain's elements.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tsr/backends/cuda/cuda_kernels.h"
#include "tsr/backends/cuda/fusion_codegen.h"
#include "tsr/error.h"

namespace tsr::detail::cuda {
namespace {

int device_arch() {
  int dev = 0, major = 0, minor = 0;
  check(cudaGetDevice(&dev), "fused_elementwise", "cudaGetDevice");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "fused_elementwise",
        "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "fused_elementwise",
        "cudaDeviceGetAttribute");
  return major * 10 + minor;
}

// Compiled kernels by (architecture, source text): a chain is compiled once per process.
cudaKernel_t kernel_for(const std::string& src) {
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, cudaKernel_t> cache;
  int arch = device_arch();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({arch, src});
  if (it != cache.end()) return it->second;
  NvrtcResult r = nvrtc_compile(src, arch);
  if (!r.ok)
    throw BackendError("[fused_elementwise] NVRTC could not compile a fused chain. Got:\n" + r.log +
                       "\nexpected it to compile. Report this as a Tessera bug; TSR_FUSION=0 "
                       "runs the chain unfused meanwhile.");
  cudaLibrary_t lib = nullptr;
  check(cudaLibraryLoadData(&lib, r.ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "fused_elementwise", "cudaLibraryLoadData");
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, lib, kFusedEntry), "fused_elementwise", "cudaLibraryGetKernel");
  cache[{arch, src}] = k;  // the library stays loaded for the process
  return k;
}

}  // namespace

void fused_elementwise(const KernelArgs& a) {
  const auto& f = static_cast<const FusedElementwise&>(*a.prim);
  if (f.n == 0) return;
  cudaKernel_t k = kernel_for(fused_source(f, *a.in, *a.out));
  // Arguments: every input pointer, every output pointer, then n.
  std::vector<const void*> ptrs;
  for (size_t i = 0; i < a.in->size(); ++i) ptrs.push_back(a.in_ptr[i]);
  for (size_t i = 0; i < a.out->size(); ++i) ptrs.push_back(a.out_ptr[i]);
  long long n = f.n;
  std::vector<void*> args;
  for (auto& p : ptrs) args.push_back(&p);
  args.push_back(&n);
  Launch l = launch_1d(f.n);
  check(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(l.blocks), dim3(l.threads),
                         args.data(), 0, stream_of(a)),
        "fused_elementwise", "cudaLaunchKernel");
}

}  // namespace tsr::detail::cuda
