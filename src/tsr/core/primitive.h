#pragma once
// The Primitive base (DESIGN §3): parameters are members; rules are methods.
// infer = shape/dtype/sharding rule; partition = which local layouts the kernel
// needs and produces (the lowering inserts the reshards between them).
#include <functional>
#include <memory>
#include <string>
#include <tuple>
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

/** An input of an equation being transposed: a known value, or a linear input whose
 *  value is unknown (invalid `value`); `type` is set either way. */
struct LinearIn {
  Array value;    /**< the input's value; invalid for a linear input */
  ArrayType type; /**< the input's type */
  /** True for a linear (unknown) input. */
  bool linear() const { return !value.valid(); }
};

/** A batching rule's result: the outputs and where each carries the batch dimension
 *  (-1: unbatched). */
struct Batched {
  std::vector<Array> outs; /**< the outputs */
  std::vector<int> dims;   /**< each output's batch dimension, or -1 */
};

/** A primitive operation with its parameters. Immutable once built. */
class Primitive : public std::enable_shared_from_this<Primitive> {
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
  /** Forward-mode rule (DESIGN §1): the tangents of the outputs, given the primal
   *  inputs, their tangents (an invalid Array is a symbolic zero; at least one is
   *  non-zero, and only float inputs have one) and the primal outputs `outs`. Returns
   *  one tangent per output (invalid: zero). Rules are written with ops, so they
   *  compose to any order. When jvp_makes_outputs() is true, `outs` arrives empty and
   *  the rule fills it (sort routes tangents through the permutation it computes). */
  virtual std::vector<Array> jvp(const std::vector<Array>& primals,
                                 const std::vector<Array>& tangents,
                                 std::vector<Array>& outs) const;
  /** True when jvp() computes the primal outputs itself. */
  virtual bool jvp_makes_outputs() const { return false; }
  /** Transpose rule of a linear primitive: cotangents of the linear inputs given the
   *  output cotangents `cts` (invalid: zero; not all zero) and the inputs, where
   *  `ins[i].value` is invalid for a linear input (only its type is known). Returns
   *  one cotangent per input (invalid: zero, or not a linear input). */
  virtual std::vector<Array> transpose(const std::vector<Array>& cts,
                                       const std::vector<LinearIn>& ins) const;
  /** Batching rule (vmap, DESIGN §1): the outputs for inputs `args` that carry a batch
   *  dimension at `dims[i]` (-1: unbatched; at least one is batched), and where each
   *  output carries it. Rules are written with ops, so they compose with every other
   *  transform; out_sharding parameters get the batch entry (batch_axis()) inserted. */
  virtual Batched batch(const std::vector<Array>& args, const std::vector<int>& dims) const;
  /** Parameters as printed: "axes=(0,) out_sharding=None"; "" when none. */
  virtual std::string params() const { return {}; }
  /** Same primitive with the same parameters. */
  virtual bool equals(const Primitive& o) const;
  /** Hash consistent with equals. */
  virtual size_t hash() const;
  /** The sub-program of a higher-order primitive (jit), or null. */
  virtual const Program* subprogram() const { return nullptr; }
  /** Every sub-program with the name it prints under ("program", "branch0", "body"):
   *  subprogram() by default; control flow has several and no inlined subprogram(). */
  virtual std::vector<std::pair<std::string, const Program*>> bodies() const {
    if (const Program* p = subprogram()) return {{"program", p}};
    return {};
  }
  /** The concrete mesh this equation must run on (creation with a concrete
   *  placement, reshard to other devices); null: the program's mesh. */
  virtual const Mesh* placement_mesh() const { return nullptr; }
  /** True when the kernel reads its inputs' block origins and global shapes
   *  (KernelArgs::in_origin / in_global), as gather and scatter do. */
  virtual bool needs_input_origins() const { return false; }
  /** False for primitives that may move a value to another mesh (reshard skips the
   *  context-mesh check, spec §13.2). */
  virtual bool checks_context_mesh() const { return true; }
  /** True for primitives whose rule sets the outputs' vma itself (collectives,
   *  shard_map); the others follow the standard vma rule (manual-spmd §3.3). */
  virtual bool custom_vma() const { return false; }
  /** True for a collective over the named axis `n`: vmap batches it even when no operand
   *  is batched (psum of an unbatched value over the vmap's axis_name is x * size). */
  virtual bool uses_axis_name(const std::string& n) const {
    (void)n;
    return false;
  }
  /** True for primitives that may not be merged or dropped (none yet). */
  virtual bool effectful() const { return false; }
};

/** Declares a primitive's jvp rule in its class (MLX's DEFINE_GRADS, split in two). */
#define TSR_DEFINE_JVP                                                                          \
  std::vector<Array> jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, \
                         std::vector<Array>& outs) const override
/** Declares a linear primitive's transpose rule in its class. */
#define TSR_DEFINE_TRANSPOSE                                  \
  std::vector<Array> transpose(const std::vector<Array>& cts, \
                               const std::vector<detail::LinearIn>& ins) const override

/** Declares a primitive's batching rule in its class. */
#define TSR_DEFINE_BATCH \
  detail::Batched batch(const std::vector<Array>& args, const std::vector<int>& dims) const override

/** How a primitive takes part in autodiff; the coverage test checks every
 *  registered primitive against what its family declared. */
enum class AdKind : uint8_t {
  Differentiable,    /**< has a jvp rule */
  Linear,            /**< has a jvp rule and a transpose rule (linear in some inputs) */
  NonDifferentiable, /**< integer/bool results or inputs only, or a step function: zero tangents */
  TransposeOnly,     /**< a transpose rule but no jvp (custom_lin: no forward mode through
                          custom_vjp, as JAX) */
};
/** Declares the AD kind of a registered primitive (`why` for NonDifferentiable and
 *  TransposeOnly). */
bool declare_ad(const char* name, AdKind kind, const char* why = "");
/** Every declaration: name -> (kind, reason). */
std::vector<std::tuple<std::string, AdKind, std::string>> ad_declarations();

/** Declares that a primitive's rule and CPU kernel take complex operands and results.
 *  A primitive with a kernel that its family has not declared refuses complex types
 *  in the rule driver (NotImplementedError), so no generic kernel meets std::complex. */
bool declare_complex(const char* name);
/** True when the primitive was declared with declare_complex. */
bool complex_declared(const char* name);

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
/** True when the operands' vma sets differ (some vary over fewer manual axes). */
bool vma_differs(const std::vector<Array>& in);
/** The operands with a pvary on each that varies over fewer manual axes than their
 *  union (manual-spmd §3.4); defined with the collectives. */
std::vector<Array> auto_pvary(const std::vector<Array>& in);

/** bind for a single-output primitive. */
Array bind1(PrimPtr prim, const std::vector<Array>& in);

}  // namespace tsr::detail
