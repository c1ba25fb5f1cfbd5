// distributed::initialize / shutdown and the process queries (tsr/distributed.h).
#include "tsr/distributed.h"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

#include "tsr/comm/process.h"
#include "tsr/error.h"
#include "tsr/runtime/env.h"
#include "tsr/runtime/runtime.h"

namespace tsr::distributed {
namespace {

bool g_initialized = false;
std::terminate_handler g_previous_terminate = nullptr;

int64_t timeout_ms(double seconds) {
  if (seconds > 0) return static_cast<int64_t>(std::ceil(seconds * 1000));
  auto v = detail::env_int({"TSR_COMM_TIMEOUT", 1, 365 * 24 * 3600, "distributed.initialize",
                            "seconds a cross-process operation waits for its peers", "60"});
  return (v ? *v : 60) * 1000;
}

// A process that dies of an uncaught exception tells its peers first, so they raise
// CommError naming it at once instead of waiting out the timeout.
[[noreturn]] void on_terminate() {
  std::string why = "terminated";
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      why = std::string("terminated by an uncaught exception: ") + ex.what();
    } catch (...) {
      why = "terminated by an uncaught exception";
    }
  }
  detail::process_backend_abort(why);
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}

std::string count_str(int v) { return std::to_string(v); }

}  // namespace

void initialize(const Options& o) {
  if (g_initialized)
    throw RuntimeError(
        "[distributed.initialize] distributed.initialize should only be called once. Got a "
        "second call; expected one per process (call shutdown() first to leave).");
  if (detail::Runtime::started())
    throw RuntimeError(
        "[distributed.initialize] tsr::distributed::initialize() must be called before any "
        "Tessera calls that might start the runtime. This includes any computation, but also "
        "calls to tsr::devices, tsr::device_put, tsr::init and others. Got a runtime that is "
        "already running; expected initialize first. Move the call to the top of main.");
  if (o.num_processes < 0)
    throw ValueError(
        "[distributed.initialize] num_processes must be a positive int. Got "
        "num_processes=" +
        count_str(o.num_processes) +
        "; expected >= 1 (or 0 "
        "for MPI's count).");
  if (o.process_id < -1 || (o.num_processes > 0 && o.process_id >= o.num_processes))
    throw ValueError(
        "[distributed.initialize] process_id and num_processes must be nonnegative, with "
        "process_id < num_processes. Got process_id=" +
        count_str(o.process_id) + ", num_processes=" + count_str(o.num_processes) + ".");
  if (o.local_device_count < 0 || o.local_device_count > detail::kMaxCpuDevices)
    throw ValueError("[distributed.initialize] local_device_count is out of range. Got " +
                     count_str(o.local_device_count) +
                     "; expected 0 (TSR_NUM_CPU_DEVICES, else "
                     "8) or a count in [1, " +
                     count_str(detail::kMaxCpuDevices) + "].");
  const int64_t ms = timeout_ms(o.timeout_s);
  detail::ProcessWorld w = detail::process_backend_start(ms);
  auto refuse = [&](const std::string& what) {
    detail::process_backend_stop();
    throw ValueError("[distributed.initialize] " + what);
  };
  if (o.num_processes > 0 && o.num_processes != w.count)
    refuse(
        "num_processes does not match the launch. Got num_processes=" + count_str(o.num_processes) +
        "; expected " + count_str(w.count) + " (MPI_COMM_WORLD's size). Launch with `mpirun -np " +
        count_str(o.num_processes) + "` or pass 0.");
  if (o.process_id >= 0 && o.process_id != w.index)
    refuse("process_id does not match the launch. Got process_id=" + count_str(o.process_id) +
           "; expected " + count_str(w.index) + " (this process's MPI rank). Pass -1.");
  int local = o.local_device_count;
  if (local == 0) {
    auto v =
        detail::env_int({"TSR_NUM_CPU_DEVICES", 1, detail::kMaxCpuDevices, "distributed.initialize",
                         "the number of simulated CPU devices", "8"});
    local = v ? static_cast<int>(*v) : 8;
  }
  // Every process must own as many devices: ids are process-major, p*L + local index.
  if (w.count > 1) {
    std::vector<int> all;
    for (int p = 0; p < w.count; ++p) all.push_back(p);
    auto counts = detail::process_allgather(all, std::to_string(local), "distributed.initialize");
    for (int p = 0; p < w.count; ++p)
      if (counts[static_cast<size_t>(p)] != std::to_string(local))
        refuse("processes have different device counts. Got " + counts[static_cast<size_t>(p)] +
               " devices on process " + count_str(p) + " and " + std::to_string(local) +
               " on process " + count_str(w.index) +
               "; expected the same local_device_count everywhere. Set TSR_NUM_CPU_DEVICES "
               "(or local_device_count) alike on every process.");
  }
  detail::Runtime::start(local, w.index, w.count);
  g_initialized = true;
  static std::once_flag once;
  std::call_once(once, [] {
    g_previous_terminate = std::set_terminate(on_terminate);
    // As JAX's atexit hook: a process that returns from main leaves the group cleanly.
    std::atexit([] {
      try {
        shutdown();
      } catch (...) {
      }
    });
  });
}

void shutdown() {
  if (!g_initialized) return;
  detail::Runtime::get().synchronize();
  detail::process_backend_stop();
  g_initialized = false;
}

bool is_initialized() { return g_initialized; }

}  // namespace tsr::distributed

namespace tsr {

int process_index() { return detail::Runtime::get().process_index(); }
int process_count() { return detail::Runtime::get().process_count(); }

std::vector<int> process_indices() {
  std::vector<int> out;
  for (int p = 0; p < process_count(); ++p) out.push_back(p);
  return out;
}

std::vector<Device> local_devices(int process) {
  auto& rt = detail::Runtime::get();
  if (process == -1) process = rt.process_index();
  if (process < 0 || process >= rt.process_count())
    throw ValueError("[local_devices] Unknown process_index " + std::to_string(process) + ". Got " +
                     std::to_string(process) + "; expected an index in [0, " +
                     std::to_string(rt.process_count()) + ").");
  // Accelerator devices exist only in one-process runs (Runtime::start_accelerators).
  if (rt.default_platform() == Platform::CUDA) return devices(Platform::CUDA);
  std::vector<Device> out;
  for (int i = 0; i < rt.local_count(); ++i)
    out.push_back(Device{Platform::CPU, process * rt.local_count() + i});
  return out;
}

int local_device_count() { return static_cast<int>(local_devices().size()); }

}  // namespace tsr
