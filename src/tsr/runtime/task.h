#pragma once
// A move-only `void()` callable stored inline: a device stream queues one per op,
// and std::function's heap block (allocated on the caller, freed on the worker)
// sent every eager op through malloc's cross-thread slow paths.
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace tsr::detail {

/** A move-only callable with kInline bytes of inline storage (heap past that). */
class Task {
 public:
  /** Bytes a callable may take without a heap allocation. */
  static constexpr size_t kInline = 240;

  Task() = default;
  /** Wraps a callable. */
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task>>>
  Task(F&& f) {  // NOLINT(google-explicit-constructor): a lambda converts implicitly
    using D = std::decay_t<F>;
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (buf_) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }
  Task(Task&& o) noexcept { take(o); }
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  /** Calls the callable. */
  void operator()() { ops_->call(buf_); }
  /** True when a callable is held. */
  explicit operator bool() const { return ops_ != nullptr; }
  /** Destroys the callable (and what it captured). */
  void reset() {
    if (ops_) ops_->destroy(buf_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* from, void* to);
    void (*destroy)(void*);
  };
  template <typename D>
  static constexpr Ops inline_ops = {[](void* p) { (*static_cast<D*>(p))(); },
                                     [](void* from, void* to) {
                                       new (to) D(std::move(*static_cast<D*>(from)));
                                       static_cast<D*>(from)->~D();
                                     },
                                     [](void* p) { static_cast<D*>(p)->~D(); }};
  template <typename D>
  static constexpr Ops heap_ops = {
      [](void* p) { (**static_cast<D**>(p))(); },
      [](void* from, void* to) { *static_cast<D**>(to) = *static_cast<D**>(from); },
      [](void* p) { delete *static_cast<D**>(p); }};

  void take(Task& o) {
    ops_ = o.ops_;
    if (ops_) ops_->move(o.buf_, buf_);
    o.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace tsr::detail
