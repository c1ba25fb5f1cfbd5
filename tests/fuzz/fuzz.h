#pragma once
// Differential fuzzer: cases (an op chain over random inputs, shardings and meshes),
// the vocabulary of ops, and the runner that compares a sharded run (eager and jit)
// against the 1-device unsharded oracle. See tests/fuzz/README.md.
#include <tsr/tsr.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fuzz {

/** splitmix64: small, fast and fully determined by its seed. */
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /** Uniform in [0, n). */
  int below(int n) { return n <= 0 ? 0 : static_cast<int>(next() % static_cast<uint64_t>(n)); }
  /** Uniform in [lo, hi]. */
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }
  /** True with probability p. */
  bool coin(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int>(v.size())))];
  }
};

/** One of the meshes the fuzzer draws: sizes and axis names (all Explicit). */
struct MeshDef {
  std::vector<int> sizes;
  std::vector<std::string> names;
  std::string str() const;
};
/** (1), (2), (4), (8), (2,2), (2,4), (2,2,2). */
const std::vector<MeshDef>& meshes();

/** How a program runs: the oracle (one device, every sharding argument dropped) or
 *  sharded on a mesh (the context mesh is set). */
struct Ctx {
  bool oracle = true;
  /** An out_sharding argument: none in the oracle. */
  tsr::ShardingArg sh(const tsr::PartitionSpec& p) const {
    return oracle ? tsr::ShardingArg{} : tsr::ShardingArg{p};
  }
  /** A creation placement: none (device 0) in the oracle. */
  tsr::Placement pl(const tsr::PartitionSpec& p) const {
    return oracle ? tsr::Placement{} : tsr::Placement{p};
  }
  /** An optional sharding argument (drawn or not). */
  tsr::ShardingArg sh(const std::optional<tsr::PartitionSpec>& p) const {
    return p ? sh(*p) : tsr::ShardingArg{};
  }
  tsr::Placement pl(const std::optional<tsr::PartitionSpec>& p) const {
    return p ? pl(*p) : tsr::Placement{};
  }
};

using Ins = std::vector<tsr::Array>;
/** One step: maps the previous value x (and the case inputs) to the next value. */
using OpFn = std::function<tsr::Array(const Ctx&, const tsr::Array& x, const Ins& in)>;

struct Step {
  std::string op;    // vocabulary name
  std::string text;  // printed form; `x` is the previous value, in<k> the inputs
  OpFn fn;
  std::vector<std::string> inner;  // a composite's (checkpoint, jit, ...) inner ops, flattened
};

/** A case input: its host values, type and (sharded run) spec. */
struct InputDef {
  tsr::Shape shape;
  tsr::DType dtype = tsr::float32;
  std::optional<tsr::PartitionSpec> spec;  // none: replicated on the mesh
  std::vector<double> values;
  tsr::Array oracle;  // the value on device 0
};

struct Case {
  uint64_t seed = 0;
  int64_t index = 0;
  int mesh = 0;
  std::vector<InputDef> inputs;
  std::vector<Step> steps;
  bool reorders = false;           // a step may legitimately round differently when sharded
  bool custom_vjp = false;         // a custom_vjp function is in the chain: jvp may be refused
  std::vector<tsr::DType> dtypes;  // of the steps' results (the oracle's), for tolerances
  // The oracle's run, done while generating (later steps are drawn from its types).
  bool oracle_ok = true;
  std::string oracle_err_class, oracle_err;
  tsr::Array oracle_out;
  std::string program() const;
  /** The ops of the chain, comma separated (composites followed by their inner ops). */
  std::string ops() const;
};

class Gen;
/** One vocabulary entry: adding a primitive to the fuzzer is one of these. */
struct OpDef {
  const char* name;
  int arity;      // array operands, counting x (documentation and the summary)
  bool reorders;  // float results may differ from the oracle by rounding
  bool linear;    // keeps an unreduced input unreduced (drawn after unreduced producers)
  Step (*draw)(Gen&);
};
/** The vocabulary (vocab.cpp). */
const std::vector<OpDef>& vocabulary();

/** Drawing helpers handed to each OpDef::draw. x is the oracle value of the previous step. */
class Gen {
 public:
  Gen(Rng& r, Case& c) : r(r), c(c) {}
  Rng& r;
  Case& c;
  tsr::Array x;            // previous value (oracle)
  bool unreduced = false;  // the step just drawn may produce an unreduced value
  /** The sharded type's spec of x (a shadow eager run while generating), rank-normalized;
   *  none when that run refused. Lets operands follow x's layout. */
  std::optional<tsr::PartitionSpec> xspec;
  /** Sharded copies of the inputs for the shadow run (invalid where device_put refused). */
  std::vector<tsr::Array> shadow_in;
  std::optional<tsr::Mesh> shadow_mesh;
  const MeshDef& mesh() const { return meshes()[static_cast<size_t>(c.mesh)]; }
  const tsr::Shape& xs() const { return x.shape(); }
  int rank() const { return x.ndim(); }
  tsr::DType dt() const { return x.dtype(); }

  /** An axis of a rank-`rank` value, negative sometimes, rarely out of range. */
  int axis(int rank, double invalid = 0.03);
  /** A dimension size (0, 1 and mesh-divisible sizes are common). */
  int64_t size();
  tsr::Shape shape(int min_rank = 0, int max_rank = 4);
  tsr::DType dtype();
  tsr::DType float_dtype();
  tsr::DType int_dtype();
  /** A spec for a value of `shape`: mostly valid (divisible), sometimes not. */
  tsr::PartitionSpec spec(const tsr::Shape& shape, double invalid = 0.06);
  /** An out_sharding: a spec, sometimes with Unreduced/Reduced axes. */
  tsr::PartitionSpec out_spec(const tsr::Shape& shape, double unreduced = 0.0);
  /** spec() or none (half the time). */
  std::optional<tsr::PartitionSpec> maybe_spec(const tsr::Shape& shape, double unreduced = 0.0);
  /** A spec for an operand of `shape`: often x's layout aligned to the trailing dims. */
  tsr::PartitionSpec operand_spec(const tsr::Shape& shape);
  /** A new case input; returns its index (in<k> in programs). */
  int input(const tsr::Shape& shape, tsr::DType dtype, bool sharded = true);
  /** A shape broadcast-compatible with `s` (or, rarely, not). */
  tsr::Shape bcast_shape(const tsr::Shape& s);

  /** The next op to draw: linear ones more often after an unreduced value; no
   *  composite (checkpoint, jit, custom_*(chain)) nested deeper than two. */
  const OpDef& pick_op();
  /** Draws one step with the op `d`: its text, fn, inner ops and case flags. */
  Step draw_step(const OpDef& d);
  /** Applies s to x (the oracle) and to the shadow run, as generate does between
   *  steps; rethrows the oracle's refusal (x is then left as it was). */
  void advance(const Step& s);
  /** device_put of the inputs drawn since the last call, for the shadow run. */
  void shadow_inputs();

  // The shadow run's state (see xspec).
  tsr::Array sx;
  bool shadow_ok = true;
  /** Composite nesting while drawing (a composite's inner steps are drawn at depth+1). */
  int depth = 0;
};

/** The shard_map step (shard_map_step.cpp): x's blocks through elementwise ops and
 *  collectives, against the oracle's reshape-and-reduce meaning of them. */
Step d_shard_map(Gen& g);
/** The shard_map-on-Auto-meshes step (auto_shard_map_step.cpp): all-Auto or mixed axis
 *  types, called directly, under jit, grad or vmap, sometimes with a host argument. */
Step d_auto_shard_map(Gen& g);

/** The vmap_collective_ad step (vocab_vmap_collectives.cpp): grad/vjp of collectives
 *  over a vmap's axis_name against a loop over the examples. */
Step d_vmap_collective_ad(Gen& g);

/** A composite's drawn sub-chain (vocab.cpp): its steps, printed text and inner ops. */
struct SubChain {
  std::vector<Step> steps;
  std::string text;
  std::vector<std::string> ops;
};
/** Draws 1-2 steps against x as it evolves, then rewinds x (vocab.cpp's sub_chain);
 *  `example`: against one example x[0] (vmap's and map's). */
SubChain draw_sub_chain(Gen& g, bool example = false);
/** Applies the steps to x. */
tsr::Array apply_chain(const std::vector<Step>& steps, const Ctx& c, const tsr::Array& x,
                       const Ins& in);
/** A composite step, printed `text{chain}(x)`, that runs fn. */
Step composite_step(std::string text, const SubChain& ch, OpFn fn);

// The steps of vocab_refused.cpp (README.md, "Autodiff vocabulary").
/** x op in<k>, in<k> reduced over an axis (x's unreduced ones, one x is sharded on, any). */
Step d_reduced_operand(Gen& g);
/** reshard(x, ...) to a layout reduced over a drawn axis. */
Step d_reshard_reduced(Gen& g);
/** jacrev/jacfwd of a sub-chain at x (sometimes x resharded reduced). */
Step d_jacobian(Gen& g);
/** checkpoint(nonlinear(cond(sub-chain))), sometimes with a second cond. */
Step d_checkpoint_cond(Gen& g);
/** scan(checkpoint(body)) over x's leading dim, the body through a cond. */
Step d_scan_checkpoint(Gen& g);

/** Builds case (seed, index): draws inputs and steps, running the oracle as it goes. */
Case generate(uint64_t seed, int64_t index);

/** The class of an outcome. */
enum class Verdict { Agree, BothRefuse, TypedError, Mismatch, Untyped, Crash, Hang };
const char* verdict_name(Verdict v);

struct Result {
  Verdict verdict = Verdict::Agree;
  std::string detail;  // one line
  /** The derivative check: "" (not run), else "agree", "vjp-only" (jvp refused through
   *  custom_vjp, as JAX; vjp agreed), "typed-error", "both-refuse" or "fail". */
  std::string ad;
};

/** Runs the case sharded (eager and jit) and compares with the oracle. When all three
 *  agree, the output is float and some input is float, the derivatives of the chain
 *  (jvp and vjp) are checked the same way with probability `ad_rate` (drawn per case).
 *  `log` gets the full story when set (--case). */
Result run_case(Case& c, std::string* log = nullptr, double ad_rate = 1.0);

// Printing helpers shared by the vocabulary.
std::string str(const tsr::Shape& s);
std::string str(const std::vector<int>& v);
std::string str(const tsr::PartitionSpec& p);
std::string str(const std::optional<tsr::PartitionSpec>& p);

}  // namespace fuzz
