#include <map>
#include <mutex>
#include <string>

#include "tsr/backends/kernel.h"
#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
namespace {

std::map<std::pair<std::string, std::string>, KernelFn>& table() {
  static std::map<std::pair<std::string, std::string>, KernelFn> t;
  return t;
}

void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_kernels();
    register_cuda_kernels();
  });
}

}  // namespace

const char* backend_name(Platform p) {
  if (p == Platform::CPU) return "cpu";
  const AcceleratorOps* ops = accelerator(p);
  return ops ? ops->kernels : "cuda";
}

void register_kernel(const char* prim, const char* backend, KernelFn fn) {
  table()[{prim, backend}] = fn;
}

KernelFn find_kernel(const char* prim, const char* backend) {
  ensure_registered();
  auto it = table().find({prim, backend});
  if (it != table().end()) return it->second;
  std::string have;
  for (const auto& [k, v] : table())
    if (k.first == prim) have += (have.empty() ? "" : ", ") + k.second;
  throw BackendError(std::string("[") + prim + "] no " + backend + " kernel for primitive '" +
                     prim + "'. Got backend " + backend + "; expected one of: " +
                     (have.empty() ? std::string("(none registered)") : have) +
                     ". Run it on a backend that has the kernel.");
}

bool has_kernel(const char* prim, const char* backend) {
  ensure_registered();
  return table().count({prim, backend}) > 0;
}

}  // namespace tsr::detail

namespace tsr::detail {

std::vector<std::string> kernel_names(const char* backend) {
  ensure_registered();
  std::vector<std::string> out;
  for (const auto& [k, v] : table())
    if (k.second == backend) out.push_back(k.first);
  return out;  // the map's order: sorted by name
}

}  // namespace tsr::detail
