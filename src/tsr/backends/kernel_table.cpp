#include <map>
#include <mutex>
#include <string>

#include "tsr/backends/kernel.h"
#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {
namespace {

std::map<std::pair<std::string, std::string>, KernelCaps>& caps_table() {
  static std::map<std::pair<std::string, std::string>, KernelCaps> t;
  return t;
}

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

void set_kernel_caps(const char* prim, const char* backend, KernelCaps caps) {
  caps_table()[{prim, backend}] = caps;
}

KernelCaps kernel_caps(const char* prim, const char* backend) {
  ensure_registered();
  auto it = caps_table().find({prim, backend});
  return it == caps_table().end() ? KernelCaps{} : it->second;
}

void check_kernel_caps(const char* prim, const char* backend, const std::vector<DType>& dtypes,
                       const std::vector<int>& ranks) {
  const KernelCaps c = kernel_caps(prim, backend);
  auto on = [&] { return std::string(" on ") + backend + " devices"; };
  for (DType t : dtypes)
    if (!c.complex && is_complex(t))
      throw NotImplementedError(std::string("[") + prim + "] " + dtype_name(t) +
                                " is not supported by " + prim + on() + " yet. Got a " +
                                dtype_name(t) + " operand or result; expected a real dtype" + on() +
                                ". Run this step on CPU devices (tsr::device_put(x, "
                                "tsr::devices(tsr::Platform::CPU)[0])) or work on the real and "
                                "imaginary parts (tsr::real, tsr::imag).");
  for (int r : ranks)
    if (r > c.max_rank)
      throw NotImplementedError(std::string("[") + prim + "] an operand or result of rank " +
                                std::to_string(r) + " is too many dims for " + prim + on() +
                                ". Got rank " + std::to_string(r) + "; expected at most " +
                                std::to_string(c.max_rank) +
                                ". Reshape to merge dims first, or run this step on CPU devices.");
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
