#pragma once
// The kernel table (DESIGN §3): kernels are not on the primitive; each backend
// registers (primitive name, backend) -> kernel. A kernel sees local blocks only.
#include <string>
#include <vector>

#include "tsr/core/primitive.h"
#include "tsr/device.h"
#include "tsr/shape.h"

namespace tsr::detail {

/** A local block's shape and dtype. */
struct LocalType {
  Shape shape;                  /**< local (per-device) shape */
  DType dtype = DType::Float32; /**< element type */
};

/** Everything one kernel invocation on one device sees. */
struct KernelArgs {
  const Primitive* prim = nullptr;             /**< parameters (downcast by the kernel) */
  const std::vector<LocalType>* in = nullptr;  /**< input local types */
  const std::vector<LocalType>* out = nullptr; /**< output local types */
  const void* const* in_ptr = nullptr;         /**< input blocks */
  void* const* out_ptr = nullptr;              /**< output blocks (preallocated) */
  const Shape* out_origin = nullptr;           /**< global position of output 0's block */
  const Shape* in_origin = nullptr; /**< per input: its block's global position (when asked) */
  const Shape* in_global = nullptr; /**< per input: its global shape (when asked) */
  int busy_devices = 1;             /**< devices running this step at once */
  void* stream = nullptr;           /**< the device's cudaStream_t (null on the CPU) */

  /** Typed input pointer. */
  template <typename T>
  const T* i(int k) const {
    return static_cast<const T*>(in_ptr[k]);
  }
  /** Typed output pointer. */
  template <typename T>
  T* o(int k) const {
    return static_cast<T*>(out_ptr[k]);
  }
};

/** A kernel: computes outputs from inputs on one device. */
using KernelFn = void (*)(const KernelArgs&);

/** The kernel table's backend name of a platform: "cpu", or the installed
 *  accelerator's ("cuda"; the tests' fake accelerator has its own). */
const char* backend_name(Platform p);
/** The backend of the devices a step runs on (an empty list: "cpu"). */
inline const char* backend_name(const std::vector<Device>& devices) {
  return devices.empty() ? "cpu" : backend_name(devices[0].platform);
}

/** Registers a kernel (done by the backend's register.cpp). */
void register_kernel(const char* prim, const char* backend, KernelFn fn);
/** The kernel for prim on backend; BackendError naming the backends that have one. */
KernelFn find_kernel(const char* prim, const char* backend = "cpu");
/** Every (prim, backend) pair registered, for the coverage test. */
bool has_kernel(const char* prim, const char* backend = "cpu");

/** What a backend's kernel takes beyond its primitive's rule: the platform's limits,
 *  checked when a step is lowered, so a kernel never meets what it cannot compute. */
struct KernelCaps {
  bool complex = true;    /**< takes complex operands / results (where the rule does) */
  int max_rank = 1 << 30; /**< the most dims of any operand or result */
};
/** Sets the caps of prim's kernel on backend (default: KernelCaps{}). */
void set_kernel_caps(const char* prim, const char* backend, KernelCaps caps);
/** The caps of prim's kernel on backend. */
KernelCaps kernel_caps(const char* prim, const char* backend);
/** NotImplementedError "[prim] ... on <backend> devices ..." when one of the step's
 *  operand or result types (dtype, rank) exceeds the caps of its kernel on backend. */
void check_kernel_caps(const char* prim, const char* backend, const std::vector<DType>& dtypes,
                       const std::vector<int>& ranks);

/** The primitive names that have a kernel on `backend`, sorted (coverage tests). */
std::vector<std::string> kernel_names(const char* backend);

/** Registers the CPU kernels (called once, before the first lookup). */
void register_cpu_kernels();
/** Registers the CUDA kernels (nothing in a build without CUDA). */
void register_cuda_kernels();

}  // namespace tsr::detail
