#pragma once
// The thread-local trace stack. While a Trace is the innermost active one,
// bind() records equations into its Program instead of running them. Arrays
// from outside (concrete, or of an outer trace) are captured as implicit inputs.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "tsr/core/array_impl.h"
#include "tsr/core/program.h"

namespace tsr::detail {

class Trace {
 public:
  /** Starts a trace and makes it the innermost one on this thread. */
  Trace();
  /** Ends it (pops it from the stack). */
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /** This trace's id (traced arrays remember it). */
  uint64_t id() const { return id_; }
  /** A new explicit input of type t, as a traced array. */
  Array new_input(const ArrayType& t);
  /** The variable for x in this trace: its own, or a captured constant. */
  VarPtr var_for(const Array& x);
  /** Records outs = prim(ins) and returns the traced outputs. */
  std::vector<Array> record(PrimPtr prim, const std::vector<Array>& in,
                            const std::vector<ArrayType>& out_types);
  /** Finishes: the program with `outs` as its results. */
  Program finish(const std::vector<Array>& outs);
  /** Types captured arrays take in this trace (shard_map: a closed-over value is an
   *  invariant block on the manual mesh); default: their own. */
  void set_capture_type(std::function<ArrayType(const ArrayType&)> f) { capture_ = std::move(f); }
  /** x's type as this trace sees it (a captured array's per set_capture_type). */
  ArrayType type_of(const Array& x) const;

 private:
  uint64_t id_;
  Program prog_;
  std::function<ArrayType(const ArrayType&)> capture_;
  std::unordered_map<const ArrayImpl*, VarPtr> captured_;
};

/** The innermost active trace on this thread, or null. */
Trace* current_trace();
/** True when trace `id` is active on this thread. */
bool trace_active(uint64_t id);

}  // namespace tsr::detail
