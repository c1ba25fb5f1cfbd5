#pragma once
// The Primitive base (DESIGN §3): parameters are members; rules are methods.
// infer = shape/dtype/sharding rule; partition = which local layouts the kernel
// needs and produces (the lowering inserts the reshards between them).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/core/program.h"

namespace tsr::detail {

/** How one equation runs per device: each input is resharded to `in` (on the
 *  lowering mesh) before the kernel, the kernel leaves its results laid out as
 *  `out` (which may carry unreduced axes: partial results), and the lowering then
 *  reshards each result to its type's sharding. */
struct Lowering {
  std::vector<PartitionSpec> in;  /**< per input */
  std::vector<PartitionSpec> out; /**< per output */
};

/** A primitive operation with its parameters. Immutable once built. */
class Primitive {
 public:
  virtual ~Primitive() = default;
  /** The name printed in programs and used by the kernel table ("add"). */
  virtual const char* name() const = 0;
  /** Output types from input types (shape, dtype, sharding, vma). Raises the
   *  user-facing TypeError / ShardingTypeError. */
  virtual std::vector<ArrayType> infer(const std::vector<ArrayType>& in) const = 0;
  /** Local layouts for the kernel. Default: every input laid out like output 0
   *  (size-1 broadcast dims unsharded), outputs as typed. */
  virtual Lowering partition(const std::vector<ArrayType>& in,
                             const std::vector<ArrayType>& out) const;
  /** Forward-mode rule (the AD issue fills these). */
  virtual std::vector<Array> jvp(const std::vector<Array>& primals,
                                 const std::vector<Array>& tangents) const;
  /** Transpose rule of a linear primitive. */
  virtual std::vector<Array> transpose(const std::vector<Array>& cotangents,
                                       const std::vector<Array>& primals) const;
  /** Batching rule (the vmap issue). */
  virtual std::vector<Array> batch(const std::vector<Array>& args,
                                   const std::vector<int>& dims) const;
  /** Parameters as printed: "axes=(0,) out_sharding=None"; "" when none. */
  virtual std::string params() const { return {}; }
  /** Same primitive with the same parameters. */
  virtual bool equals(const Primitive& o) const;
  /** Hash consistent with equals. */
  virtual size_t hash() const;
  /** The sub-program of a higher-order primitive (jit), or null. */
  virtual const Program* subprogram() const { return nullptr; }
  /** The concrete mesh this equation must run on (creation with a concrete
   *  placement, reshard to other devices); null: the program's mesh. */
  virtual const Mesh* placement_mesh() const { return nullptr; }
  /** True when the kernel reads its inputs' block origins and global shapes
   *  (KernelArgs::in_origin / in_global), as gather and scatter do. */
  virtual bool needs_input_origins() const { return false; }
  /** False for primitives that may move a value to another mesh (reshard skips the
   *  context-mesh check, spec §13.2). */
  virtual bool checks_context_mesh() const { return true; }
  /** True for primitives that may not be merged or dropped (none yet). */
  virtual bool effectful() const { return false; }
};

/** The registry of primitive names (for printing, and the coverage test). */
const std::vector<std::string>& registered_primitives();
/** Registers a name once (done by each family's static registrar). */
bool register_primitive(const char* name);

/** Runs the rule driver of spec §11 around prim.infer: context-mesh check (E4),
 *  input mesh equality (E3), Auto/Manual short-circuit, illegal-result (E2). */
std::vector<ArrayType> infer_types(const Primitive& prim, const std::vector<ArrayType>& in);

/** Applies a primitive: records it when a trace is active, else runs it eagerly
 *  through the same lowering as jit (cached by primitive and input types). */
std::vector<Array> bind(PrimPtr prim, const std::vector<Array>& in);
/** bind for a single-output primitive. */
Array bind1(PrimPtr prim, const std::vector<Array>& in);

}  // namespace tsr::detail
