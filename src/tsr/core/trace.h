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
   *  invariant block on the manual mesh), given their type in the enclosing trace;
   *  default: that type. */
  void set_capture_type(std::function<ArrayType(const ArrayType&)> f) { capture_ = std::move(f); }
  /** x's type as this trace sees it: its own for this trace's values, else its type in
   *  the enclosing trace passed through set_capture_type's function (so a loop body or
   *  a jit inside a shard_map body sees a constant made there as the body does). */
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
/** x's type as the innermost active trace sees it (its own type outside any trace): the
 *  type a transform or control-flow entry traces its function at. */
ArrayType seen_type(const Array& x);

}  // namespace tsr::detail
