#pragma once
// JAX's M37 check in device_put of a process-local value (array.cpp), and the scope
// that skips it where the library places such a value itself (process_local.cpp).

namespace tsr::detail {

/** While alive on this thread, device_put of a process-local value onto a mesh of
 *  every process skips the check that every process passed the same value: the
 *  library's own placements (every eager op would pay an exchange for it). */
class SkipSameValueCheck {
 public:
  SkipSameValueCheck();
  ~SkipSameValueCheck();
  SkipSameValueCheck(const SkipSameValueCheck&) = delete;
  SkipSameValueCheck& operator=(const SkipSameValueCheck&) = delete;

 private:
  bool previous_;
};

}  // namespace tsr::detail
