#pragma once
/** Device memory: what each device's caching allocator holds (as jax's
 *  Device.memory_stats()), and clear_caches() to hand cached memory back.
 *
 *  Every device allocates its buffers through a caching allocator: a freed buffer's
 *  block is kept for reuse (steady-state dispatch then calls no malloc) until the
 *  device holds TSR_ALLOCATOR_CACHE_BYTES of free blocks (default 256 MiB per
 *  device, read once at start-up; 0 caches nothing); a block freed past that limit
 *  goes back to the OS at once, so a large array freed and made again faults its
 *  pages in afresh (TSR_ALLOCATOR_HUGEPAGES=1 makes those faults 2 MiB each).
 *  Buffers are counted when an op is dispatched (dispatch is asynchronous), and a
 *  buffer an unfinished task still reads is released when that task has run: call
 *  synchronize() before reading the stats for a settled figure. */
#include <cstdint>

#include "tsr/device.h"

namespace tsr {

/** One device's memory, in bytes of the allocator's size classes (a request is
 *  rounded up to a class at most 25% larger; tiny ones to 64 bytes). */
struct MemoryStats {
  int64_t bytes_in_use = 0;       /**< held by live buffers (arrays, in-flight temporaries) */
  int64_t peak_bytes_in_use = 0;  /**< most bytes_in_use since start or reset_peak_memory_stats */
  int64_t bytes_cached = 0;       /**< freed blocks kept for reuse, not yet returned to the OS */
  int64_t cache_limit = 0;        /**< most bytes_cached can reach (TSR_ALLOCATOR_CACHE_BYTES) */
  int64_t num_allocs = 0;         /**< buffers handed out since start */
  int64_t largest_alloc_size = 0; /**< largest single buffer handed out since start */
};

/** The memory counters of `device` (jax: device.memory_stats()); ValueError for a
 *  device that is not one of devices(). */
MemoryStats memory_stats(const Device& device);

/** Restarts `device`'s peak_bytes_in_use from its current bytes_in_use. */
void reset_peak_memory_stats(const Device& device);

/** As jax.clear_caches(), plus the allocators: waits for every stream (so finished
 *  work has released its temporaries), drops the eager-op executable cache and every
 *  jit object's traced programs and executables (the next call traces and lowers
 *  again), then returns every device's cached free blocks to the OS (bytes_cached
 *  becomes 0). Live arrays are untouched; safe while other threads dispatch. */
void clear_caches();

}  // namespace tsr
