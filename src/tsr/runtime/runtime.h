#pragma once
// The process-wide runtime: simulated devices, their streams and allocators, the
// dispatch lock that keeps every stream's task order consistent (collectives
// rely on it), and the cache of communication groups.
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/core/small_vec.h"
#include "tsr/device.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/allocator.h"
#include "tsr/runtime/stream.h"

namespace tsr::detail {

/** A block of device memory plus the ticket of the task that fills it. */
struct DeviceBuffer {
  int device = 0;           /**< device id */
  void* ptr = nullptr;      /**< 64-byte aligned data */
  size_t nbytes = 0;        /**< requested size */
  uint64_t ticket = 0;      /**< producing task on the device's stream (0: ready) */
  std::exception_ptr error; /**< set by the producer when it failed */

  DeviceBuffer(int dev, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /** Blocks until the producer ran; rethrows its error. */
  void wait() const;
  /** Typed data pointer. */
  template <typename T>
  T* data() const {
    return static_cast<T*>(ptr);
  }
};
using BufferPtr = std::shared_ptr<DeviceBuffer>;

/** The most simulated CPU devices init and TSR_NUM_CPU_DEVICES accept. */
constexpr int kMaxCpuDevices = 4096;

/** TSR_ALLOCATOR_CACHE_BYTES, parsed (default 256 MiB). */
size_t allocator_cache_limit();
/** TSR_INLINE_DISPATCH_BYTES, parsed (default 64 KiB): a program without
 *  collectives that touches at most this many bytes over all its devices runs on
 *  the calling thread when their streams are idle (0: always queue to the streams). */
size_t inline_dispatch_bytes();
/** TSR_ALLOCATOR_POISON, parsed (default off). */
bool allocator_poison();
/** TSR_ALLOCATOR_HUGEPAGES, parsed (default off). */
bool allocator_hugepages();
/** One stream (worker thread) per device; BackendError naming the count when the
 *  host cannot start them (std::system_error from std::thread). */
std::vector<std::unique_ptr<Stream>> start_streams(int n);
/** ValueError (naming `api`) unless d is one of devices(): a platform this build
 *  has and an id in range. */
void check_device(const Device& d, const char* api);
/** ValueError (naming `api`) unless d is one of this process's devices. */
void check_local_device(const Device& d, const char* api);

class Runtime {
 public:
  /** The runtime, started with defaults on first use. */
  static Runtime& get();
  /** Starts the runtime with n devices (once): n of this process's when it is one of
   *  `processes` (distributed::initialize), each owning n devices. */
  static void start(int n, int process_index = 0, int processes = 1);
  /** True once started. */
  static bool started();

  /** Number of devices of every process. */
  int num_devices() const { return local_count() * processes_; }
  /** Number of this process's devices. */
  int local_count() const { return static_cast<int>(streams_.size()); }
  /** This process's first device id. */
  int first_local() const { return process_ * local_count(); }
  /** This process's index. */
  int process_index() const { return process_; }
  /** Number of processes. */
  int process_count() const { return processes_; }
  /** True when device `dev` (a runtime index, slot()) is this process's. */
  bool is_local(int dev) const {
    if (dev >= kAccelSlot) return dev - kAccelSlot < accel_count();
    return dev >= first_local() && dev < first_local() + local_count();
  }
  /** The stream of a local device. */
  Stream& stream(int dev) {
    return dev >= kAccelSlot ? *accel_[dev - kAccelSlot].stream : *streams_[dev - first_local()];
  }
  /** The allocator of a local device. */
  CachingAllocator& allocator(int dev) {
    return dev >= kAccelSlot ? *accel_[dev - kAccelSlot].alloc : *allocators_[dev - first_local()];
  }
  /** How host code reads and writes a local device's buffers. */
  DeviceMemory memory(int dev) const {
    if (dev < kAccelSlot) return {};
    return {accel_ops_, accel_[dev - kAccelSlot].queue};
  }
  /** The accelerator devices of this process (CUDA: GPUs times virtual devices). */
  int accel_count() const { return static_cast<int>(accel_.size()); }
  /** The physical accelerator behind accelerator device `dev` (a runtime index). */
  int gpu_of(int dev) const { return accel_[dev - kAccelSlot].gpu; }
  /** The accelerator's ops (null when this process has no accelerator devices). */
  const AcceleratorOps* accel_ops() const { return accel_ops_; }
  /** Why there are no accelerator devices ("" when there are). */
  const std::string& accel_absent() const { return accel_absent_; }
  /** The platform devices() lists: TSR_PLATFORM, else CUDA when it has devices. */
  Platform default_platform() const { return default_platform_; }
  /** A fresh buffer on a device. */
  BufferPtr alloc(int dev, size_t nbytes);
  /** Held while one operation enqueues its tasks on several streams. */
  std::mutex& dispatch_mutex() { return dispatch_mu_; }
  /** The (cached) group whose rank r is device_ids[r]: in-process threads, or
   *  hierarchical over MPI when the devices span processes. */
  std::shared_ptr<GroupImpl> group(const std::vector<int>& device_ids);
  /** Waits for every stream. */
  void synchronize();
  /** Turns TSR_ALLOCATOR_POISON's fill of fresh allocations on or off (tests). */
  void set_allocator_poison(bool on);

 private:
  Runtime(int n, int process_index, int processes);
  void start_accelerators();
  // One accelerator device: a physical GPU's share (its own queue, worker and pool).
  struct AccelDevice {
    int gpu = 0;
    void* queue = nullptr;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<CachingAllocator> alloc;
  };
  std::vector<AccelDevice> accel_;
  const AcceleratorOps* accel_ops_ = nullptr;
  std::string accel_absent_;
  Platform default_platform_ = Platform::CPU;
  int process_ = 0;
  int processes_ = 1;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<CachingAllocator>> allocators_;
  std::mutex dispatch_mu_;
  std::mutex group_mu_;
  std::map<std::vector<int>, std::shared_ptr<GroupImpl>> groups_;
};

/** A buffer's first n bytes as host memory: the buffer itself on a CPU device, a copy
 *  read from an accelerator's (after the device's queued work). */
class HostRead {
 public:
  /** Reads n bytes of b (b's producer must have run: wait() first). */
  HostRead(const DeviceBuffer& b, size_t n);
  /** The bytes. */
  const void* data() const { return p_; }

 private:
  std::vector<unsigned char> copy_;
  const void* p_ = nullptr;
};

/** Host memory whose bytes become a buffer's first n bytes at commit(): the buffer
 *  itself on a CPU device, a staging copy written to an accelerator's. */
class HostWrite {
 public:
  /** Stages n bytes for b. */
  HostWrite(DeviceBuffer& b, size_t n);
  /** Where to write. */
  void* data() { return p_; }
  /** Writes the staged bytes into the buffer (nothing to do on a CPU device). */
  void commit();

 private:
  DeviceBuffer* b_;
  std::vector<unsigned char> copy_;
  void* p_ = nullptr;
};

/** The buffers a task reads or writes (inline for the common few). */
using BufferList = SmallVec<BufferPtr, 3>;

/** The first error among `ins` (a failed producer), or null. */
std::exception_ptr first_error(const BufferList& ins);

/** Queues a task on a device's stream without allocating: fn(err, ins, outs) runs on
 *  the worker; `err` is set when an input failed, and fn must then only tell its
 *  collectives (fail_groups) so peers raise. An exception from fn, or `err`, passes
 *  to the outputs. Sets each output's ticket. Hold the dispatch mutex when an op
 *  spans devices. */
/** Runs a task body now on this thread, as launch_task's worker would: fn(err, ins,
 *  outs) with `err` set when an input failed; an error passes to the outputs. */
template <class F>
void run_now(const BufferList& ins, const BufferList& outs, F& fn) {
  std::exception_ptr err = first_error(ins);
  try {
    fn(err, ins, outs);
  } catch (...) {
    if (!err) err = std::current_exception();
  }
  if (err)
    for (const auto& b : outs) b->error = err;
}

template <class F>
void launch_task(int dev, BufferList ins, BufferList outs, F fn) {
  DeviceBuffer* small[4];
  std::vector<DeviceBuffer*> many;  // only for ops with more than 4 outputs
  DeviceBuffer** out_ptrs = small;
  if (outs.size() > 4) {
    many.resize(outs.size());
    out_ptrs = many.data();
  }
  const size_t n_out = outs.size();
  for (size_t i = 0; i < n_out; ++i) out_ptrs[i] = outs[i].get();
  uint64_t ticket = Runtime::get().stream(dev).enqueue(
      [ins = std::move(ins), outs = std::move(outs), fn = std::move(fn)]() mutable {
        run_now(ins, outs, fn);
      });
  for (size_t i = 0; i < n_out; ++i) out_ptrs[i]->ticket = ticket;
}

/** launch_task for a plain fn: before fn runs, a failed input skips it and passes
 *  the error to the outputs; the task's collectives (`groups`, in the order fn
 *  would call them) are told (fail) so peers raise instead of waiting. If fn
 *  itself throws, fn must have told the groups it did not reach (GroupSequence). */
void launch(int dev, std::vector<BufferPtr> ins, std::vector<BufferPtr> outs,
            std::function<void()> fn, std::vector<Group> groups = {}, const char* op = nullptr);

/** The collectives one device task calls, in order. Call next() before each one;
 *  on an exception, fail_rest() tells the groups not yet reached so peers raise. */
class GroupSequence {
 public:
  /** The groups in call order (not copied: they must outlive the sequence). */
  explicit GroupSequence(const std::vector<Group>& groups) : groups_(&groups) {}
  /** The next group; after this its rendezvous settles the outcome for all ranks. */
  const Group& next() { return groups_->at(used_++); }
  /** Passes over `n` groups a loop or branch used through its own sequences. */
  void skip(size_t n) { used_ += n; }
  /** Tells every group not yet used that this rank failed. Never throws. */
  void fail_rest(const char* op, const std::string& why) noexcept;

 private:
  const std::vector<Group>* groups_;
  size_t used_ = 0;
};

/** Tells each group that this rank failed with `err` (used for skipped tasks). */
void fail_groups(const std::vector<Group>& groups, const char* op, std::exception_ptr err) noexcept;

}  // namespace tsr::detail
