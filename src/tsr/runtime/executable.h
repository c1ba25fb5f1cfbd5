#pragma once
// A lowered program: values with concrete layouts, and steps (kernels on local
// blocks, reshards between layouts) that every device runs in order inside one
// task per device. Eager ops and jit calls both end here.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tsr/backends/kernel.h"
#include "tsr/core/program.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/runtime/runtime.h"
#include "tsr/sharding/reshard_plan.h"
#include "tsr/transforms.h"

namespace tsr::detail {

struct ArrayMeta;

class Executable : public std::enable_shared_from_this<Executable> {
 public:
  /** A value of the lowered program: its global type and concrete layout. */
  struct Value {
    Shape shape;
    DType dtype = DType::Float32;
    bool weak = false;
    NamedSharding layout;  // concrete, rank-normalized
    size_t local_bytes = 0;
  };
  struct Control;
  /** One step: a kernel on the devices of `mesh`, or a reshard plan. */
  struct Step {
    KernelFn fn = nullptr;
    PrimPtr prim;
    std::vector<int> ins, outs;
    std::vector<LocalType> in_local, out_local;
    std::vector<Shape> origins;  // per flat mesh position: output 0's block origin
    // When the primitive asks: inputs' global shapes, and per flat position the
    // inputs' block origins.
    std::vector<Shape> in_global;
    std::vector<std::vector<Shape>> in_origins;
    std::optional<Mesh> mesh;
    std::shared_ptr<const Plan> plan;  // set for reshard steps
    // A shard_map boundary: outs[0] is ins[0]'s buffer under another type (a block
    // of a global array <-> the body's value). No data moves: when outs[0] is a
    // preallocated program output, ins[0] is computed in that buffer (run_device);
    // only an ins[0] that already has a buffer (an input) is copied there. Also a
    // reduction whose reduced dims have local extent 1 (prim set): the block is its result.
    bool alias = false;
    // A collective of a shard_map body (mesh set) over the devices that differ only
    // along the named axes, or each device's axis index.
    enum class Coll : uint8_t {
      None,
      AllReduce,
      AxisIndex,
      AllGather,
      ReduceScatter,
      Permute,
      AllToAll,
      Broadcast
    } coll = Coll::None;
    ReduceOp reduce_op = ReduceOp::Sum;
    prim::CollectiveRun run;                 // block permutations and counts (layout kinds)
    std::vector<std::pair<int, int>> perm;   // Permute: (src, dst) group ranks
    int root = 0;                            // Broadcast: the source's group rank
    std::vector<std::vector<int>> coll_ids;  // per flat position: the group's device ids
    std::vector<int> coll_rank;              // per flat position: rank in its group
    // A loop or a branch (cond, while, scan): its bodies run on the devices, in the
    // device's task, without returning to the host per iteration.
    std::shared_ptr<const Control> ctl;
    // What asked for this data movement (comm report): "operand 1 of dot_general",
    // "psum"; implicit when the partitioner inserted it rather than the program.
    std::string cause;
    bool implicit = false;
  };
  /** A control-flow step's bodies, lowered on the step's mesh (loops keep their carry
   *  buffers on the device, double-buffered; xs/ys slices are read and written in place). */
  struct Control {
    enum class Kind : uint8_t { Cond, While, Scan } kind = Kind::Cond;
    /** Cond: the branches; While: cond then body; Scan: the body. */
    std::vector<std::shared_ptr<const Executable>> subs;
    size_t n_consts = 0;                    // Scan: constants; While: the predicate's constants
    size_t n_consts2 = 0;                   // While: the body's constants
    size_t n_carry = 0;                     // While, Scan
    int64_t length = 0;                     // Scan
    bool reverse = false;                   // Scan
    std::vector<size_t> x_bytes, y_bytes;   // Scan: one slice of each xs / ys, per device
    std::vector<std::vector<int>> sub_dev;  // per sub, per flat position: its DeviceRun, or -1
    std::vector<size_t> n_groups;           // per flat position: the bodies' collectives
  };
  /** What one device does. */
  struct DeviceRun {
    int dev = 0;
    std::vector<std::pair<int, int>> steps;    // (step, position: flat mesh index or plan rank)
    std::vector<Group> groups;                 // collectives in call order
    std::vector<std::vector<int>> free_after;  // per entry of steps: values to release
    std::vector<int> input_pos;                // per program input: flat position, or -1
    std::vector<int> output_pos;               // per program output: flat position, or -1
  };

  std::vector<Value> values;
  std::vector<Step> steps;
  std::vector<int> inputs;   // value id per program input (consts, then explicit inputs)
  std::vector<int> outputs;  // value id per output
  std::vector<DeviceRun> devs;
  std::vector<int> out_input;        // per output: the program input it is, or -1
  std::vector<int> out_first;        // per output: first output with the same value
  std::vector<ArrayType> out_types;  // per output: its type (derived once, at lowering)
  std::vector<std::shared_ptr<const ArrayMeta>> out_meta;  // per output: type + layout
  bool runs_inline = false;  // small, no collectives or loops: may run on the caller
  // With several processes: the lowered program's text (layouts, then equations) and
  // the processes that run it; compared across them before the first run.
  std::string fingerprint;
  std::vector<int> processes;
  mutable std::once_flag agreed;

  /** Runs on the given inputs (concrete, laid out as lowered); returns outputs. */
  std::vector<Array> run(const std::vector<Array>& in) const;
  /** The per-device lowered program as text. */
  std::string str() const;
  /** Device run `di`'s task: fails its groups on an input error `err`, else runs
   *  it on `ins` (the inputs it reads) into `outs` (its fresh outputs). */
  void run_task(int di, std::exception_ptr err, const BufferList& ins,
                const BufferList& outs) const;
  /** Runs device run `di` (inside its task); slots hold inputs and outputs. */
  void run_device(int di, std::vector<void*>& slots) const;
  /** Runs this (a body) once on device run `di` with inputs `in` into outputs `out`
   *  (distinct buffers; outputs that are inputs or repeats are copied through `mem`,
   *  the device's memory). */
  void run_body(int di, const std::vector<void*>& in, const std::vector<void*>& out,
                std::vector<void*>& scratch, const DeviceMemory& mem) const;
};

/** Every communication of `ex` (and of its loop and branch bodies). */
CommReport comm_report(const Executable& ex);

/** Raises CommError on every process of `ex` whose lowered program differs from
 *  another's, naming the first differing line. */
void check_same_program(const Executable& ex);
/** The same for any text that every process of `processes` (sorted, this one among
 *  them) must agree on before a cross-process step; agreement is remembered by
 *  content. `op` names the caller. */
void check_same_text(const std::vector<int>& processes, const std::string& text, const char* op);

/** With several processes: the inputs this process alone holds (on its default
 *  device, where a value made without a placement lives: JAX's uncommitted arrays),
 *  of a program whose mesh (an input's typed mesh, else `named`, else the context
 *  mesh) has devices of other processes, are put replicated on that mesh. A
 *  process-local value is the global value, so every process lowers and runs the
 *  same program. False (and `in` untouched) when nothing moves, always in one process. */
bool place_process_local(std::vector<Array>& in, const Mesh* named = nullptr);

/** The first concrete mesh an equation names (a placement, a shard_map), looking into
 *  its bodies; null when none. */
const Mesh* mesh_named_by(const Primitive& prim);
/** The first concrete mesh a program's equations name; null when none. */
const Mesh* mesh_named_by(const Program& p);

/** Lowers a program for inputs laid out as `in_layouts` (concrete). Optional
 *  `out_layouts` force output placements (jit out_shardings). */
std::shared_ptr<const Executable> lower(
    const Program& p, const std::vector<NamedSharding>& in_layouts,
    const std::vector<std::optional<NamedSharding>>& out_layouts = {});

}  // namespace tsr::detail
