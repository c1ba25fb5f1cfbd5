#pragma once
// One table record per primitive (DESIGN §7): inputs, the op, and the specs to try.
// The driver runs every record sharded on meshes (1), (2), (8) and (2,4) and checks
// values against the unsharded single-device run, the result's layout against its
// type, and jit against eager.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tsr/tsr.h"

namespace rules {

/** How an input's values are generated. */
enum class Gen { Any, Pos, Small, Int, Bool, Index };

/** One input: shape, dtype, values. */
struct In {
  tsr::Shape shape;
  tsr::DType dtype = tsr::float32;
  Gen gen = Gen::Any;
};

/** A record. `specs` lists spec combinations (one P per input); axis names are
 *  "x" and "y"; combos naming an axis the mesh lacks, or not dividing, are skipped. */
struct Record {
  std::vector<std::string> prims;  // primitives this record covers
  std::string name;
  std::vector<In> inputs;
  std::function<std::vector<tsr::Array>(const std::vector<tsr::Array>&)> fn;
  std::vector<std::vector<tsr::PartitionSpec>> specs;
  double rtol = 1e-5;
  /** True for a record whose fn must be refused by its rule on every mesh and spec
   *  (checked eagerly, under jit, and under jit with the result unused). */
  bool refuses = false;
  /** The single-device oracle, when it differs from fn (e.g. fn keeps a value unreduced). */
  std::function<std::vector<tsr::Array>(const std::vector<tsr::Array>&)> oracle = {};
  /** How the gradient check treats the record: Check (finite differences in float64
   *  and the vjp identity, to order 2), NoFD (no finite differences: a function with
   *  kinks or discrete steps at the inputs; derivatives still checked sharded vs one
   *  device), RevOnly (reverse mode only, checked against finite differences: custom_vjp
   *  functions have no forward mode), FwdOnly (forward mode only: while_loop has no
   *  reverse mode), Skip (with a reason in grad_why). */
  enum class Grad { Check, NoFD, RevOnly, FwdOnly, Skip } grad = Grad::Check;
  /** Why a record skips or weakens its gradient check. */
  std::string grad_why = {};
  /** Set when the Auto table may move more bytes than the Explicit program, with why
   *  (a known weakness of the Auto pass); its values are still compared. */
  std::string auto_comm_why = {};
};

/** Helper: a single-output op. */
inline std::function<std::vector<tsr::Array>(const std::vector<tsr::Array>&)> one(
    std::function<tsr::Array(const std::vector<tsr::Array>&)> f) {
  return [f](const std::vector<tsr::Array>& a) { return std::vector<tsr::Array>{f(a)}; };
}

/** Registers a family's records; each record file ends with
 *  `static const rules::RecordSet kSet(my_records);` so the driver needs no edit. */
struct RecordSet {
  /** Adds `f` to the driver's list. */
  explicit RecordSet(std::vector<Record> (*f)());
};
/** Every registered family's records. */
std::vector<Record> all_records();

/** Primitives the coverage test accepts without a sharding rule, with the reason
 *  they only run replicated (empty today: every primitive has a rule). */
const std::vector<std::pair<std::string, std::string>>& replicated_only();

/** An input's values (deterministic; `salt` varies them per operand). */
std::vector<double> values(const In& in, int salt);
/** An input placed at `where`. */
tsr::Array make(const In& in, int salt, const tsr::Placement& where);
/** An input for gradient checks: float32 becomes float64 (finite differences need the
 *  precision) and every float value is nudged by an index-dependent amount, so no
 *  input sits on a kink (abs at 0, ties of max), a step (floor at an integer) or so
 *  near a pole (1/x) that finite differences lose their precision. */
tsr::Array make_grad(const In& in, int salt, const tsr::Placement& where);
/** A mesh the driver runs records on. */
struct MeshCase {
  std::string label;              /**< "(2,4)" */
  std::vector<int> sizes;         /**< axis sizes */
  std::vector<std::string> names; /**< axis names */
};
/** Meshes (1), (2), (8), (2,4). */
const std::vector<MeshCase>& meshes();
/** True when every axis p names is one of the mesh's. */
bool mesh_has(const MeshCase& m, const tsr::PartitionSpec& p);

/** Makes input k of a record at a placement (the driver's `make`, or gradients' own). */
using MakeInput = std::function<tsr::Array(const In&, int, const tsr::Placement&)>;
/** Runs `body(inputs, what)` on every mesh and spec combination of `rec` whose axes
 *  the mesh has and whose inputs it divides, with the mesh as the context mesh;
 *  `what` names the record, mesh and specs. body returns false to stop. Returns how
 *  many layouts ran. */
int for_each_layout(
    const Record& rec, const MakeInput& make_input,
    const std::function<bool(const std::vector<tsr::Array>&, const std::string&)>& body);

/** A record's name as a gtest parameter name (non-alphanumerics become '_'). */
std::string record_name(const ::testing::TestParamInfo<Record>& info);

/** gtest prints a record by its name (ctest lists it instead of a byte dump). */
inline void PrintTo(const Record& r, std::ostream* os) { *os << r.name; }

}  // namespace rules
