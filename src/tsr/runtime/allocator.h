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

class CachingAllocator {
 public:
  /** `cache_limit` bytes of freed blocks are kept for reuse. */
  explicit CachingAllocator(size_t cache_limit);
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
  /** Fill every block allocate() hands out with 0xFF bytes (TSR_ALLOCATOR_POISON):
   *  a kernel that leaves an output element unwritten then shows NaN / -1. */
  void set_poison(bool on) { poison_.store(on, std::memory_order_relaxed); }
  /** The size class a request of `bytes` is rounded to. */
  static size_t size_class(size_t bytes);

 private:
  void* poisoned(void* p, size_t bytes) const;
  /** The free list of a size class (a flat array up to 4 KiB, a map above). */
  std::vector<void*>& free_list(size_t cls);
  mutable std::mutex mu_;
  std::array<std::vector<void*>, 64> small_;  // classes 64, 128, ..., 4096
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cache_limit_;
  size_t cached_ = 0;
  size_t live_ = 0;
  std::atomic<bool> poison_{false};
};

}  // namespace tsr::detail
