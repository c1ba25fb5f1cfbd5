#pragma once
/** Devices and runtime start-up. Simulated CPU devices live in this process: each
 *  has one in-order stream served by one worker thread. CUDA devices (a build with
 *  TSR_CUDA and a GPU) each have such a stream too, plus a CUDA stream and pool. */
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tsr {

/** The kind of hardware a device is. */
enum class Platform : uint8_t { CPU, CUDA };

/** A device handle: a small value. */
struct Device {
  Platform platform = Platform::CPU; /**< hardware kind */
  int id = 0;                        /**< global device id */
  /** Equality of platform and id. */
  bool operator==(const Device&) const = default;
  /** "CPU 3" — the label visualize() uses. */
  std::string label() const;
  /** "CpuDevice(id=3)". */
  std::string str() const;
  /** The process that owns the device (tsr/distributed.h): id / local_device_count(). */
  int process_index() const;
};
/** Prints Device::str(). */
std::ostream& operator<<(std::ostream& os, const Device& d);

/** Options for init(). */
struct InitOptions {
  /** Number of simulated CPU devices, at most 4096; 0 means TSR_NUM_CPU_DEVICES, else 8. */
  int num_cpu_devices = 0;
};

/** Starts the runtime. Called implicitly with default options on first use;
 *  calling it again with a different device count raises ValueError, and so do a
 *  count past 4096 and a malformed TSR_* variable; BackendError when the device
 *  threads cannot start. */
void init(const InitOptions& options = {});
/** True once the runtime has started. */
bool is_initialized();
/** The devices of the default platform, of every process, in id order: process-major
 *  (process p owns CPU ids [p*L, (p+1)*L) for L devices per process). */
std::vector<Device> devices();
/** The devices of one platform (CUDA: GPUs times TSR_CUDA_VIRTUAL_DEVICES, one
 *  process only; empty when there are none). */
std::vector<Device> devices(Platform platform);
/** The platform devices() lists: TSR_PLATFORM (cpu or cuda) when set, else CUDA when
 *  this process has a CUDA device, else CPU (as JAX's default backend). */
Platform default_platform();
/** Number of devices of the default platform. */
int device_count();
/** Blocks until every stream has run everything queued so far. */
void synchronize();

}  // namespace tsr
