// memory_stats / clear_caches: the public view of the per-device allocators and of
// the compilation caches.
#include "tsr/memory.h"

#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/caches.h"
#include "tsr/runtime/runtime.h"

namespace tsr {

MemoryStats memory_stats(const Device& device) {
  detail::check_local_device(device, "memory_stats");
  detail::AllocatorStats s = detail::Runtime::get().allocator(detail::slot(device)).stats();
  MemoryStats m;
  m.bytes_in_use = static_cast<int64_t>(s.live);
  m.peak_bytes_in_use = static_cast<int64_t>(s.peak);
  m.bytes_cached = static_cast<int64_t>(s.cached);
  m.cache_limit = static_cast<int64_t>(s.cache_limit);
  m.num_allocs = static_cast<int64_t>(s.num_allocs);
  m.largest_alloc_size = static_cast<int64_t>(s.largest);
  return m;
}

void reset_peak_memory_stats(const Device& device) {
  detail::check_local_device(device, "reset_peak_memory_stats");
  detail::Runtime::get().allocator(detail::slot(device)).reset_peak();
}

void clear_caches() {
  auto& rt = detail::Runtime::get();
  // Executables first: a jit program's constants are buffers, released into the
  // allocators' caches when the program goes.
  detail::clear_eager_cache();
  detail::clear_jit_caches();
  // Finished tasks drop their references to temporaries, which then reach the caches.
  rt.synchronize();
  for (int d = rt.first_local(); d < rt.first_local() + rt.local_count(); ++d)
    rt.allocator(d).clear_cache();
  for (int d = 0; d < rt.accel_count(); ++d) rt.allocator(detail::kAccelSlot + d).clear_cache();
}

}  // namespace tsr
