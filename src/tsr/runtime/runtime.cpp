#include "tsr/runtime/runtime.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "tsr/error.h"

namespace tsr::detail {
namespace {

Runtime* g_runtime = nullptr;
std::mutex g_start_mu;

int default_device_count() {
  if (const char* env = std::getenv("TSR_NUM_CPU_DEVICES")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || n < 1 || n > 4096)
      throw ValueError(std::string("[init] TSR_NUM_CPU_DEVICES is not a device count. Got '") +
                       env + "'; expected an integer in [1, 4096]. Set it to e.g. 8.");
    return static_cast<int>(n);
  }
  return 8;
}

size_t cache_limit() {
  if (const char* env = std::getenv("TSR_ALLOCATOR_CACHE_BYTES"))
    return std::strtoull(env, nullptr, 10);
  return size_t{256} << 20;
}

}  // namespace

DeviceBuffer::DeviceBuffer(int dev, size_t bytes)
    : device(dev), ptr(Runtime::get().allocator(dev).allocate(bytes)), nbytes(bytes) {}

DeviceBuffer::~DeviceBuffer() { Runtime::get().allocator(device).release(ptr, nbytes); }

void DeviceBuffer::wait() const {
  if (ticket) Runtime::get().stream(device).wait(ticket);
  if (error) std::rethrow_exception(error);
}

Runtime::Runtime(int n) {
  for (int i = 0; i < n; ++i) {
    allocators_.push_back(std::make_unique<CachingAllocator>(cache_limit()));
    streams_.push_back(std::make_unique<Stream>());
  }
}

// The runtime is never destroyed: arrays in static storage may outlive any
// destructor order we could pick, and worker threads just stop at exit.
Runtime& Runtime::get() {
  if (!g_runtime) start(0);
  return *g_runtime;
}

void Runtime::start(int n) {
  std::lock_guard<std::mutex> lock(g_start_mu);
  int want = n > 0 ? n : default_device_count();
  if (g_runtime) {
    if (n > 0 && g_runtime->num_devices() != n)
      throw ValueError(
          "[init] the runtime is already running. Got num_cpu_devices=" + std::to_string(n) +
          "; expected " + std::to_string(g_runtime->num_devices()) +
          " (the count it started with). Call tsr::init once, before any "
          "other Tessera call.");
    return;
  }
  g_runtime = new Runtime(want);
}

bool Runtime::started() { return g_runtime != nullptr; }

std::shared_ptr<GroupImpl> Runtime::group(const std::vector<int>& device_ids) {
  std::lock_guard<std::mutex> lock(group_mu_);
  auto& g = groups_[device_ids];
  if (!g) g = make_threads_group(static_cast<int>(device_ids.size()));
  return g;
}

void Runtime::synchronize() {
  for (auto& s : streams_) s->synchronize();
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
  for (; used_ < groups_.size(); ++used_) {
    try {
      groups_[used_].fail(op ? op : "collective", why);
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

void launch(int dev, std::vector<BufferPtr> ins, std::vector<BufferPtr> outs,
            std::function<void()> fn, std::vector<Group> groups, const char* op) {
  // Outputs get the ticket after the move below; keep raw pointers (no allocation
  // for the common few-output case).
  DeviceBuffer* small[8];
  std::vector<DeviceBuffer*> many;
  DeviceBuffer** out_ptrs = small;
  if (outs.size() > 8) {
    many.resize(outs.size());
    out_ptrs = many.data();
  }
  size_t n_out = outs.size();
  for (size_t i = 0; i < n_out; ++i) out_ptrs[i] = outs[i].get();
  auto task = [ins = std::move(ins), outs = std::move(outs), fn = std::move(fn),
               groups = std::move(groups), op]() {
    std::exception_ptr err;
    for (const auto& b : ins)
      if (b->error) {
        err = b->error;
        break;
      }
    if (err) {
      fail_groups(groups, op, err);
    } else {
      try {
        fn();
      } catch (...) {
        err = std::current_exception();
      }
    }
    if (err)
      for (const auto& b : outs) b->error = err;
  };
  uint64_t ticket = Runtime::get().stream(dev).enqueue(std::move(task));
  for (size_t i = 0; i < n_out; ++i) out_ptrs[i]->ticket = ticket;
}

}  // namespace tsr::detail

namespace tsr {

void init(const InitOptions& options) {
  if (options.num_cpu_devices < 0)
    throw ValueError("[init] num_cpu_devices is negative. Got " +
                     std::to_string(options.num_cpu_devices) +
                     "; expected 0 (default) or a positive count.");
  detail::Runtime::start(options.num_cpu_devices);
}

bool is_initialized() { return detail::Runtime::started(); }

std::vector<Device> devices() {
  int n = detail::Runtime::get().num_devices();
  std::vector<Device> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(Device{Platform::CPU, i});
  return out;
}

int device_count() { return detail::Runtime::get().num_devices(); }

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
