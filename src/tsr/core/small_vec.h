#pragma once
// A vector that keeps its first N elements inline: the hot dispatch path builds
// argument and buffer lists per op, and a heap allocation per list per device was
// a third of an eager op's cost (issue 14).
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace tsr::detail {

/** A vector with inline storage for N elements; grows onto the heap past N. */
template <typename T, size_t N>
class SmallVec {
 public:
  SmallVec() = default;
  ~SmallVec() {
    clear();
    if (data_ != inline_data()) ::operator delete(data_);
  }
  SmallVec(const SmallVec& o) {
    reserve(o.size_);
    for (const T& v : o) push_back(v);
  }
  SmallVec(SmallVec&& o) noexcept { take(std::move(o)); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) {
      clear();
      reserve(o.size_);
      for (const T& v : o) push_back(v);
    }
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      clear();
      if (data_ != inline_data()) ::operator delete(data_);
      data_ = inline_data();
      cap_ = N;
      take(std::move(o));
    }
    return *this;
  }

  /** Number of elements. */
  size_t size() const { return size_; }
  /** True when there are no elements. */
  bool empty() const { return size_ == 0; }
  /** Element i (unchecked). */
  T& operator[](size_t i) { return data_[i]; }
  /** Element i (unchecked). */
  const T& operator[](size_t i) const { return data_[i]; }
  /** Last element. */
  T& back() { return data_[size_ - 1]; }
  /** Last element. */
  const T& back() const { return data_[size_ - 1]; }
  /** First element. */
  T* begin() { return data_; }
  /** Past the last element. */
  T* end() { return data_ + size_; }
  /** First element. */
  const T* begin() const { return data_; }
  /** Past the last element. */
  const T* end() const { return data_ + size_; }
  /** The elements, contiguous. */
  T* data() { return data_; }
  /** The elements, contiguous. */
  const T* data() const { return data_; }

  /** Appends a copy. */
  void push_back(const T& v) { emplace_back(v); }
  /** Appends by move. */
  void push_back(T&& v) { emplace_back(std::move(v)); }
  /** Constructs an element at the end. */
  template <typename... A>
  T& emplace_back(A&&... a) {
    if (size_ == cap_) reserve(cap_ * 2);
    T* p = new (data_ + size_) T(std::forward<A>(a)...);
    ++size_;
    return *p;
  }
  /** Destroys every element; keeps the storage. */
  void clear() {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }
  /** Grows the storage to hold at least n elements. */
  void reserve(size_t n) {
    if (n <= cap_) return;
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T)));
    std::uninitialized_move(data_, data_ + size_, fresh);
    std::destroy(data_, data_ + size_);
    if (data_ != inline_data()) ::operator delete(data_);
    data_ = fresh;
    cap_ = n;
  }
  /** Resizes to n elements, value-initialising new ones. */
  void resize(size_t n) {
    reserve(n);
    while (size_ < n) emplace_back();
    while (size_ > n) data_[--size_].~T();
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(buf_); }
  void take(SmallVec&& o) {
    if (o.data_ == o.inline_data()) {
      std::uninitialized_move(o.data_, o.data_ + o.size_, data_);
      size_ = o.size_;
      o.clear();
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.inline_data();
      o.cap_ = N;
      o.size_ = 0;
    }
  }

  alignas(T) unsigned char buf_[N * sizeof(T)];
  T* data_ = inline_data();
  size_t size_ = 0;
  size_t cap_ = N;
};

}  // namespace tsr::detail
