#include "tsr/runtime/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <system_error>

#include "tsr/comm/device/device_group.h"
#include "tsr/comm/process.h"
#include "tsr/comm/rendezvous.h"
#include "tsr/error.h"
#include "tsr/runtime/env.h"
#include "tsr/runtime/timeline.h"

namespace tsr::detail {
namespace {

Runtime* g_runtime = nullptr;
std::mutex g_start_mu;
const AcceleratorOps* g_accel = nullptr;  // set_accelerator's, else cuda_accelerator()
bool g_accel_set = false;

int default_device_count() {
  auto n = env_int({"TSR_NUM_CPU_DEVICES", 1, kMaxCpuDevices, "init",
                    "the number of simulated CPU devices", "8"});
  return n ? static_cast<int>(*n) : 8;
}

}  // namespace

DeviceBuffer::DeviceBuffer(int dev, size_t bytes)
    : device(dev), ptr(Runtime::get().allocator(dev).allocate(bytes)), nbytes(bytes) {}

DeviceBuffer::~DeviceBuffer() { Runtime::get().allocator(device).release(ptr, nbytes); }

void DeviceBuffer::wait() const {
  if (ticket) Runtime::get().stream(device).wait(ticket);
  if (error) std::rethrow_exception(error);
}

namespace {
// Recycled DeviceBuffer blocks (object + shared_ptr control block): buffers are made
// on the dispatching thread and often die on a device's worker, and malloc's
// cross-thread frees were its slowest path (issue 14's profile).
class BufferBlockPool {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes == block_ && !free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
      if (block_ == 0) block_ = bytes;
    }
    return ::operator new(bytes);
  }
  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes == block_ && free_.size() < kMaxFree) {
        free_.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr size_t kMaxFree = 1 << 16;
  std::mutex mu_;
  size_t block_ = 0;  // the one block size (allocate_shared's, fixed per build)
  std::vector<void*> free_;
};

BufferBlockPool& buffer_pool() {
  static auto* pool = new BufferBlockPool();  // never destroyed: buffers may outlive statics
  return *pool;
}

template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(buffer_pool().take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { buffer_pool().give(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};
}  // namespace

BufferPtr Runtime::alloc(int dev, size_t nbytes) {
  return std::allocate_shared<DeviceBuffer>(PoolAllocator<DeviceBuffer>{}, dev, nbytes);
}

size_t allocator_cache_limit() {
  auto v = env_int({"TSR_ALLOCATOR_CACHE_BYTES", 0, INT64_MAX, "init",
                    "bytes of freed blocks each device's allocator keeps for reuse", "268435456"});
  return v ? static_cast<size_t>(*v) : size_t{256} << 20;
}

size_t inline_dispatch_bytes() {
  static const size_t bytes = [] {
    auto v = env_int({"TSR_INLINE_DISPATCH_BYTES", 0, INT64_MAX, "init",
                      "bytes up to which a program without collectives runs on the calling "
                      "thread when its devices are idle",
                      "65536"});
    return v ? static_cast<size_t>(*v) : size_t{64} << 10;
  }();
  return bytes;
}

bool allocator_poison() {
  return env_flag("TSR_ALLOCATOR_POISON", "init",
                  "1 fills every fresh allocation with 0xFF bytes, to expose unwritten outputs");
}

bool allocator_hugepages() {
  return env_flag("TSR_ALLOCATOR_HUGEPAGES", "init",
                  "1 asks for transparent huge pages on fresh allocations of 2 MiB and more");
}

std::vector<std::unique_ptr<Stream>> start_streams(int n) {
  std::vector<std::unique_ptr<Stream>> streams;
  auto fail = [&](const char* why) {
    // Destroying `streams` joins the workers that did start.
    size_t started = streams.size();
    streams.clear();
    throw BackendError("[init] could not start the worker threads of " + std::to_string(n) +
                       " simulated devices (" + why + "; " + std::to_string(started) +
                       " started). Got num_cpu_devices=" + std::to_string(n) +
                       "; expected a count this host can run one thread each for. Use fewer "
                       "devices (tsr::init({.num_cpu_devices = 8}) or TSR_NUM_CPU_DEVICES).");
  };
  try {
    streams.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) streams.push_back(std::make_unique<Stream>());
  } catch (const std::system_error& e) {
    fail(e.what());
  } catch (const std::bad_alloc&) {
    fail("out of memory");
  }
  return streams;
}

int accelerator_virtual_devices() {
  return static_cast<int>(
      env_int({"TSR_CUDA_VIRTUAL_DEVICES", 1, 64, "init",
               "devices each GPU presents (own stream and memory pool each)", "8"})
          .value_or(1));
}

void set_accelerator(Platform p, const AcceleratorOps* ops) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (p != Platform::CUDA || g_runtime)
    throw ValueError(
        "[set_accelerator] an accelerator is installed for the CUDA platform before the runtime "
        "starts. Got a call after tsr::init or for the CPU platform; expected it first. Install it "
        "before any other Tessera call.");
  g_accel = ops;
  g_accel_set = true;
}

const AcceleratorOps* accelerator(Platform p) {
  if (p != Platform::CUDA) return nullptr;
  return g_accel_set ? g_accel : cuda_accelerator();
}

HostRead::HostRead(const DeviceBuffer& b, size_t n) : p_(b.ptr) {
  DeviceMemory mem = Runtime::get().memory(b.device);
  if (mem.host()) return;
  copy_.resize(n);
  mem.read(copy_.data(), b.ptr, n);
  p_ = copy_.data();
}

HostWrite::HostWrite(DeviceBuffer& b, size_t n) : b_(&b), p_(b.ptr) {
  if (Runtime::get().memory(b.device).host()) return;
  copy_.resize(n);
  p_ = copy_.data();
}

void HostWrite::commit() {
  if (!copy_.empty()) Runtime::get().memory(b_->device).write(b_->ptr, copy_.data(), copy_.size());
}

void check_local_device(const Device& d, const char* api) {
  check_device(d, api);
  auto& rt = Runtime::get();
  if (!rt.is_local(slot(d)))
    throw ValueError(std::string("[") + api + "] the device belongs to another process. Got " +
                     d.str() + " of process " + std::to_string(d.process_index()) +
                     "; expected one of this process's devices (process " +
                     std::to_string(rt.process_index()) +
                     "). Use tsr::local_devices() to list them.");
}

void check_device(const Device& d, const char* api) {
  auto& rt = Runtime::get();
  if (d.platform == Platform::CUDA) {
    int n = rt.accel_count();
    if (d.id >= 0 && d.id < n) return;
    throw ValueError(std::string("[") + api + "] unknown device. Got " + d.str() + "; expected " +
                     (n ? "a CUDA device with an id in [0, " + std::to_string(n) + ")"
                        : "a CPU device (there are no CUDA devices: " + rt.accel_absent() + ")") +
                     ". Use tsr::devices(tsr::Platform::CUDA) to list them.");
  }
  int n = rt.num_devices();
  if (d.platform != Platform::CPU || d.id < 0 || d.id >= n)
    throw ValueError(std::string("[") + api + "] unknown device. Got " + d.str() +
                     "; expected a CPU device with an id in [0, " + std::to_string(n) +
                     "). Use tsr::devices(tsr::Platform::CPU) to list them.");
}

Runtime::Runtime(int n, int process_index, int processes)
    : process_(process_index), processes_(processes) {
  // Every TSR_* variable is parsed at start-up, so a bad value fails init, not
  // the first collective that happens to read it.
  size_t cache = allocator_cache_limit();
  bool poison = allocator_poison();
  inline_dispatch_bytes();
  bool huge = allocator_hugepages();
  resolve_timeout_ms(0);
  for (int i = 0; i < n; ++i) {
    allocators_.push_back(std::make_unique<CachingAllocator>(cache, process_index * n + i));
    allocators_.back()->set_hugepages(huge);
  }
  streams_ = start_streams(n);
  start_accelerators();
  set_allocator_poison(poison);
}

void Runtime::start_accelerators() {
  const int per_gpu = accelerator_virtual_devices();
  auto choice =
      env_choice("TSR_PLATFORM", "init", "the platform tsr::devices() lists", {"cpu", "cuda"});
  accel_ops_ = accelerator(Platform::CUDA);
  int gpus = 0;
  if (!accel_ops_)
    accel_absent_ = "this build has no CUDA backend (configure with -DTSR_CUDA=ON)";
  else if (processes_ > 1)
    accel_absent_ = "CUDA devices are not supported with several processes yet";
  else if ((gpus = accel_ops_->count()) == 0)
    accel_absent_ = accel_ops_->why_none();
  if (choice == size_t{1} && gpus == 0)
    throw ValueError(
        "[init] TSR_PLATFORM asks for CUDA devices but there are none. Got "
        "TSR_PLATFORM=cuda; expected a process with a CUDA device (" +
        accel_absent_ + "). Unset TSR_PLATFORM or set it to cpu.");
  if (gpus == 0) {
    accel_ops_ = nullptr;
    return;
  }
  const size_t cache = allocator_cache_limit();
  const int n = gpus * per_gpu;
  auto workers = start_streams(n);
  for (int i = 0; i < n; ++i) {
    AccelDevice d;
    d.gpu = i / per_gpu;
    d.queue = accel_ops_->make_stream(d.gpu);
    d.stream = std::move(workers[static_cast<size_t>(i)]);
    d.alloc = std::make_unique<CachingAllocator>(cache, kAccelSlot + i);
    d.alloc->use_device_memory(accel_ops_, d.gpu, d.queue);
    accel_.push_back(std::move(d));
  }
  default_platform_ = choice == size_t{0} ? Platform::CPU : Platform::CUDA;
}

void Runtime::set_allocator_poison(bool on) {
  for (auto& a : allocators_) a->set_poison(on);
  for (auto& d : accel_) d.alloc->set_poison(on);
}

// The runtime is never destroyed: arrays in static storage may outlive any
// destructor order we could pick, and worker threads just stop at exit.
Runtime& Runtime::get() {
  if (!g_runtime) start(0);
  return *g_runtime;
}

void Runtime::start(int n, int process_index, int processes) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  int want = n > 0 ? n : default_device_count();
  if (g_runtime) {
    if (n > 0 && g_runtime->local_count() != n)
      throw ValueError(
          "[init] the runtime is already running. Got num_cpu_devices=" + std::to_string(n) +
          "; expected " + std::to_string(g_runtime->local_count()) +
          " (the count it started with). Call tsr::init once, before any "
          "other Tessera call.");
    return;
  }
  g_runtime = new Runtime(want, process_index, processes);
  // Work still queued at exit must finish before the libraries it calls (OpenBLAS)
  // run their destructors: exit handlers run before shared libraries' finalizers.
  std::atexit([] { g_runtime->synchronize(); });
  timeline::start_from_env();
}

bool Runtime::started() { return g_runtime != nullptr; }

std::shared_ptr<GroupImpl> Runtime::group(const std::vector<int>& device_ids) {
  std::lock_guard<std::mutex> lock(group_mu_);
  auto& g = groups_[device_ids];
  if (g) return g;
  const bool mine =
      std::any_of(device_ids.begin(), device_ids.end(), [&](int d) { return is_local(d); });
  const bool all =
      std::all_of(device_ids.begin(), device_ids.end(), [&](int d) { return is_local(d); });
  const auto accel = static_cast<size_t>(
      std::count_if(device_ids.begin(), device_ids.end(), [](int d) { return d >= kAccelSlot; }));
  // Accelerator devices (always all of this process) exchange device memory directly.
  if (all && accel == device_ids.size()) {
    std::vector<DeviceRank> ranks;
    for (int d : device_ids) ranks.push_back({memory(d), gpu_of(d)});
    g = make_device_group(std::move(ranks));
    return g;
  }
  // A group with no device here is never called on this process; the threads group
  // stands in so that plans can hold one for every device.
  if (all || !mine) {
    g = make_threads_group(static_cast<int>(device_ids.size()));
    // CPU and accelerator devices together (an input moving onto a GPU mesh): the
    // accelerator ranks take part through host copies.
    if (all && accel > 0) {
      std::vector<DeviceMemory> mems;
      for (int d : device_ids) mems.push_back(memory(d));
      g = make_staged_group(std::move(g), std::move(mems));
    }
  } else {
    g = make_process_group(device_ids, local_count(), process_);
  }
  return g;
}

void Runtime::synchronize() {
  for (auto& s : streams_) s->synchronize();
  for (auto& d : accel_) {
    d.stream->synchronize();
    accel_ops_->sync(d.queue);
  }
}

namespace {
std::string what_of(std::exception_ptr err) {
  try {
    std::rethrow_exception(err);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "an unknown error";
}
}  // namespace

void GroupSequence::fail_rest(const char* op, const std::string& why) noexcept {
  for (; used_ < groups_->size(); ++used_) {
    try {
      (*groups_)[used_].fail(op ? op : "collective", why);
    } catch (...) {
      // The peers now know; this rank keeps its own error.
    }
  }
}

void fail_groups(const std::vector<Group>& groups, const char* op,
                 std::exception_ptr err) noexcept {
  GroupSequence seq(groups);
  seq.fail_rest(op, what_of(err));
}

std::exception_ptr first_error(const BufferList& ins) {
  for (const auto& b : ins)
    if (b->error) return b->error;
  return nullptr;
}

void launch(int dev, std::vector<BufferPtr> ins, std::vector<BufferPtr> outs,
            std::function<void()> fn, std::vector<Group> groups, const char* op) {
  BufferList in_list, out_list;
  for (auto& b : ins) in_list.push_back(std::move(b));
  for (auto& b : outs) out_list.push_back(std::move(b));
  launch_task(dev, std::move(in_list), std::move(out_list),
              [fn = std::move(fn), groups = std::move(groups), op](
                  std::exception_ptr err, const BufferList&, const BufferList&) {
                if (err)
                  fail_groups(groups, op, err);
                else
                  fn();
              });
}

}  // namespace tsr::detail

namespace tsr {

void init(const InitOptions& options) {
  if (options.num_cpu_devices < 0 || options.num_cpu_devices > detail::kMaxCpuDevices)
    throw ValueError("[init] num_cpu_devices is out of range. Got " +
                     std::to_string(options.num_cpu_devices) +
                     "; expected 0 (TSR_NUM_CPU_DEVICES, else 8) or a count in [1, " +
                     std::to_string(detail::kMaxCpuDevices) +
                     "], the same cap as TSR_NUM_CPU_DEVICES. Use fewer simulated devices.");
  detail::Runtime::start(options.num_cpu_devices);
}

bool is_initialized() { return detail::Runtime::started(); }

std::vector<Device> devices() { return devices(default_platform()); }

std::vector<Device> devices(Platform platform) {
  auto& rt = detail::Runtime::get();
  int n = platform == Platform::CUDA ? rt.accel_count() : rt.num_devices();
  std::vector<Device> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(Device{platform, i});
  return out;
}

Platform default_platform() { return detail::Runtime::get().default_platform(); }

int Device::process_index() const {
  auto& rt = detail::Runtime::get();
  return platform == Platform::CUDA ? rt.process_index() : id / rt.local_count();
}

int device_count() { return static_cast<int>(devices().size()); }

void synchronize() { detail::Runtime::get().synchronize(); }

std::string Device::label() const {
  return (platform == Platform::CPU ? "CPU " : "GPU ") + std::to_string(id);
}

std::string Device::str() const {
  return (platform == Platform::CPU ? "CpuDevice(id=" : "CudaDevice(id=") + std::to_string(id) +
         ")";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace tsr
