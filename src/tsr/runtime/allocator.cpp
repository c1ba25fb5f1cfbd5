#include "tsr/runtime/allocator.h"

#include <sys/mman.h>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tsr/error.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/timeline.h"

namespace tsr::detail {

CachingAllocator::CachingAllocator(size_t cache_limit, int device)
    : cache_limit_(cache_limit), device_(device) {}

CachingAllocator::~CachingAllocator() { clear_cache(); }

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= 64) return 64;
  if (bytes <= 4096) return (bytes + 63) & ~size_t{63};
  // Quarter-power-of-two classes above 4 KiB: at most 25% waste, few classes.
  size_t p = std::bit_floor(bytes - 1);
  size_t q = p / 4;
  return (bytes + q - 1) / q * q;
}

std::vector<void*>& CachingAllocator::free_list(size_t cls) {
  return cls <= 4096 ? small_[cls / 64 - 1] : free_[cls];
}

void* CachingAllocator::allocate(size_t bytes) {
  size_t cls = size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = free_list(cls);
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      cached_ -= cls;
      note_alloc(cls);
    }
  }
  if (p) return poisoned(p, cls);
  p = fresh(cls);
  if (!p) {
    clear_cache();
    p = fresh(cls);
  }
  if (!p)
    throw BackendError("[allocator] out of memory. Got a request for " + std::to_string(bytes) +
                       " bytes; expected it to fit in " +
                       (ops_ ? "the device's memory" : "host memory") +
                       ". Free arrays or use fewer devices.");
  if (!ops_ && cls >= kHugeMin && hugepages_.load(std::memory_order_relaxed)) {
    // Before the first touch, so the faults can map 2 MiB pages. Advice only: a
    // kernel without THP leaves the block as it is.
    auto a = (reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t{4095};
    auto end = (reinterpret_cast<uintptr_t>(p) + cls) & ~uintptr_t{4095};
    if (end > a) madvise(reinterpret_cast<void*>(a), end - a, MADV_HUGEPAGE);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    note_alloc(cls);
  }
  return poisoned(p, cls);
}

void CachingAllocator::note_alloc(size_t cls) {
  live_ += cls;
  peak_ = std::max(peak_, live_);
  ++num_allocs_;
  largest_ = std::max(largest_, cls);
  if (timeline::on()) timeline::memory(device_, live_);
}

void* CachingAllocator::poisoned(void* p, size_t bytes) const {
  if (!poison_.load(std::memory_order_relaxed)) return p;
  if (ops_)
    ops_->fill(stream_, p, 0xFF, bytes);
  else
    std::memset(p, 0xFF, bytes);
  return p;
}

void CachingAllocator::use_device_memory(const AcceleratorOps* ops, int gpu, void* stream) {
  ops_ = ops;
  gpu_ = gpu;
  stream_ = stream;
}

void* CachingAllocator::fresh(size_t cls) {
  return ops_ ? ops_->alloc(gpu_, cls) : std::aligned_alloc(64, cls);
}

void CachingAllocator::free_block(void* p) {
  if (ops_)
    ops_->free(gpu_, p);
  else
    std::free(p);
}

void CachingAllocator::release(void* ptr, size_t bytes) {
  size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  live_ -= cls;
  const bool keep = cached_ + cls <= cache_limit_;
  if (keep) {
    free_list(cls).push_back(ptr);
    cached_ += cls;
  } else {
    free_block(ptr);
  }
  if (timeline::on()) timeline::memory(device_, live_);
}

void CachingAllocator::clear_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cls, list] : free_)
    for (void* p : list) free_block(p);
  free_.clear();
  for (auto& list : small_) {
    for (void* p : list) free_block(p);
    list.clear();
  }
  cached_ = 0;
}

size_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

size_t CachingAllocator::live_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {live_, peak_, cached_, cache_limit_, num_allocs_, largest_};
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = live_;
}

}  // namespace tsr::detail
