#pragma once
// An accelerator platform as the runtime sees it: device memory, one queue (stream)
// per device, copies in and out of host memory. The CUDA backend provides one; the
// tests install a fake whose memory the host cannot read, which proves that every
// host access to a buffer goes through DeviceMemory.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tsr/device.h"
#include "tsr/dtype.h"
#include "tsr/shape.h"

namespace tsr::detail {

/** What an accelerator backend gives the runtime (plain function pointers: the
 *  backend lives in its own translation units, core has no #ifdef). */
struct AcceleratorOps {
  const char* kernels = nullptr;           /**< the kernel table's backend name ("cuda") */
  int (*count)() = nullptr;                /**< usable physical devices (0: none) */
  std::string (*why_none)() = nullptr;     /**< why count() is 0, for messages */
  void* (*make_stream)(int gpu) = nullptr; /**< a new queue on physical device `gpu` */
  /** Blocks until everything queued on the stream has run; BackendError on a fault. */
  void (*sync)(void* stream) = nullptr;
  /** Device memory on `gpu` (null when it is full). */
  void* (*alloc)(int gpu, size_t bytes) = nullptr;
  /** Returns alloc()'s block. */
  void (*free)(int gpu, void* p) = nullptr;
  /** Device -> host after the stream's queued work; returns when dst holds the bytes. */
  void (*to_host)(void* stream, void* dst, const void* src, size_t n) = nullptr;
  /** Host -> device, queued on the stream; returns when src may be reused. */
  void (*to_device)(void* stream, void* dst, const void* src, size_t n) = nullptr;
  /** Device -> device (the same platform), queued on the stream. */
  void (*copy)(void* stream, void* dst, const void* src, size_t n) = nullptr;
  /** Sets n bytes to `byte`, queued on the stream. */
  void (*fill)(void* stream, void* dst, int byte, size_t n) = nullptr;
  /** Makes `gpu` the calling thread's device (before its kernels launch). */
  void (*bind)(int gpu) = nullptr;
  /** `height` rows of `width` bytes, rows `spitch` / `dpitch` bytes apart, device ->
   *  device (any two devices of the platform), queued on the stream. */
  void (*copy2d)(void* stream, void* dst, size_t dpitch, const void* src, size_t spitch,
                 size_t width, size_t height) = nullptr;
  /** dst = op(a, b) over n elements of dt on one physical device, as the host groups
   *  combine (comm/combine.h); `op` is a ReduceOp. dst may equal a or b. */
  void (*reduce)(void* stream, void* dst, const void* a, const void* b, int64_t n, DType dt,
                 int op) = nullptr;
};

/** The CUDA backend's ops (null in a build without CUDA). */
const AcceleratorOps* cuda_accelerator();
/** Installs the ops of an accelerator platform before the runtime starts (tests install
 *  a fake); without a call the runtime takes cuda_accelerator(). */
void set_accelerator(Platform p, const AcceleratorOps* ops);
/** The ops of platform p (null for the CPU, and for CUDA when this build has none). */
const AcceleratorOps* accelerator(Platform p);

/** The runtime's index of a device (its stream, allocator and buffers): a CPU
 *  device's id, kAccelSlot + id for an accelerator's. */
constexpr int kAccelSlot = 1 << 24;
/** TSR_CUDA_VIRTUAL_DEVICES, parsed (1 to 64, default 1): devices each GPU presents. */
int accelerator_virtual_devices();

/** The runtime index of d. */
inline int slot(const Device& d) { return d.platform == Platform::CPU ? d.id : kAccelSlot + d.id; }
/** The device at a runtime index. */
inline Device device_at(int slot) {
  return slot >= kAccelSlot ? Device{Platform::CUDA, slot - kAccelSlot}
                            : Device{Platform::CPU, slot};
}

/** Host code's only way to touch a buffer's bytes: memcpy on a CPU device, the
 *  platform's copies (ordered on the device's stream) on an accelerator. */
struct DeviceMemory {
  const AcceleratorOps* ops = nullptr; /**< null: host memory */
  void* stream = nullptr;              /**< the device's queue (accelerators) */
  /** True when the bytes live in host memory. */
  bool host() const { return ops == nullptr; }
  /** Device bytes -> host (waits for the device's queued work). */
  void read(void* host_dst, const void* src, size_t n) const;
  /** Host bytes -> device. */
  void write(void* dst, const void* host_src, size_t n) const;
  /** Device -> device on this device. */
  void copy(void* dst, const void* src, size_t n) const;
  /** Sets n bytes to `byte`. */
  void fill(void* dst, int byte, size_t n) const;
  /** Waits for the device's queued work. */
  void sync() const;
  /** copy_box (core/box_copy.h) on this device's memory. */
  void copy_box(const void* src, const Shape& src_shape, const Shape& src_origin, void* dst,
                const Shape& dst_shape, const Shape& dst_origin, const Shape& extent,
                size_t itemsize) const;
  /** [a, b, c] -> [b, a, c] of `item`-byte elements (prim::swap_leading). */
  void swap_leading(const void* src, void* dst, const int64_t abc[3], size_t item) const;
};

}  // namespace tsr::detail
