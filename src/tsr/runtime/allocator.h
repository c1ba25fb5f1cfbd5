#pragma once
// Per-device caching allocator: 64-byte aligned blocks, freed blocks kept in
// size-class free lists so steady-state dispatch does not call malloc.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tsr::detail {

struct AcceleratorOps;

/** A snapshot of one allocator's counters (bytes are size classes). */
struct AllocatorStats {
  size_t live = 0;         /**< handed out, not yet released */
  size_t peak = 0;         /**< the most `live` reached since start or reset_peak() */
  size_t cached = 0;       /**< freed blocks held in the free lists */
  size_t cache_limit = 0;  /**< the most `cached` may reach */
  uint64_t num_allocs = 0; /**< allocate() calls since start */
  size_t largest = 0;      /**< largest size class handed out since start */
};

class CachingAllocator {
 public:
  /** `cache_limit` bytes of freed blocks are kept for reuse; `device` names the
   *  timeline's memory counters. */
  explicit CachingAllocator(size_t cache_limit, int device = -1);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /** A 64-byte aligned block of at least `bytes` (never null; BackendError on OOM). */
  void* allocate(size_t bytes);
  /** Returns a block from allocate(bytes). */
  void release(void* ptr, size_t bytes);
  /** Frees every cached block. */
  void clear_cache();
  /** Bytes held in the free lists. */
  size_t cached_bytes() const;
  /** Bytes handed out and not yet released. */
  size_t live_bytes() const;
  /** Every counter at once, consistent with each other. */
  AllocatorStats stats() const;
  /** Restarts the peak from the bytes live now. */
  void reset_peak();
  /** Fill every block allocate() hands out with 0xFF bytes (TSR_ALLOCATOR_POISON):
   *  a kernel that leaves an output element unwritten then shows NaN / -1. */
  void set_poison(bool on) { poison_.store(on, std::memory_order_relaxed); }
  /** Ask the kernel for transparent huge pages on fresh blocks of kHugeMin bytes and
   *  more (TSR_ALLOCATOR_HUGEPAGES): one fault per 2 MiB instead of per 4 KiB. */
  void set_hugepages(bool on) { hugepages_.store(on, std::memory_order_relaxed); }
  /** Smallest fresh block set_hugepages(true) advises. */
  static constexpr size_t kHugeMin = size_t{2} << 20;
  /** The size class a request of `bytes` is rounded to. */
  static size_t size_class(size_t bytes);
  /** Fresh blocks come from an accelerator's memory on `gpu` (poison filled on
   *  `stream`) instead of the host's. Call before the first allocate(). */
  void use_device_memory(const AcceleratorOps* ops, int gpu, void* stream);

 private:
  void* poisoned(void* p, size_t bytes) const;
  void* fresh(size_t cls);
  void free_block(void* p);
  /** The free list of a size class (a flat array up to 4 KiB, a map above). */
  std::vector<void*>& free_list(size_t cls);
  void note_alloc(size_t cls);  // with mu_ held
  mutable std::mutex mu_;
  std::array<std::vector<void*>, 64> small_;  // classes 64, 128, ..., 4096
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cache_limit_;
  size_t cached_ = 0;
  size_t live_ = 0;
  // Statistics only (memory_stats): updated under mu_ where live_ grows.
  size_t peak_ = 0;
  uint64_t num_allocs_ = 0;
  size_t largest_ = 0;
  int device_ = -1;
  const AcceleratorOps* ops_ = nullptr;  // null: host memory
  int gpu_ = 0;
  void* stream_ = nullptr;
  std::atomic<bool> poison_{false};
  std::atomic<bool> hugepages_{false};
};

}  // namespace tsr::detail
