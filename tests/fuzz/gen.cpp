// Case generation: meshes, shapes, dtypes, specs and inputs, and the oracle run that
// types each step before the next one is drawn.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "fuzz.h"

namespace fuzz {

using namespace tsr;

std::string MeshDef::str() const {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + names[i] + "=" + std::to_string(sizes[i]);
  return s + ")";
}

const std::vector<MeshDef>& meshes() {
  static const std::vector<MeshDef> m = {{{1}, {"x"}},
                                         {{2}, {"x"}},
                                         {{4}, {"x"}},
                                         {{8}, {"x"}},
                                         {{2, 2}, {"x", "y"}},
                                         {{2, 4}, {"x", "y"}},
                                         {{2, 2, 2}, {"x", "y", "z"}}};
  return m;
}

std::string str(const Shape& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + ")";
}
std::string str(const std::vector<int>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? "," : "") + std::to_string(v[i]);
  return o + "]";
}
std::string str(const PartitionSpec& p) { return p.repr(); }
std::string str(const std::optional<PartitionSpec>& p) { return p ? p->repr() : "None"; }

int Gen::axis(int rank, double invalid) {
  if (rank == 0 || r.coin(invalid)) return r.coin(0.5) ? rank : -rank - 1;
  int a = r.below(rank);
  return r.coin(0.25) ? a - rank : a;
}

int64_t Gen::size() {
  static const std::vector<int64_t> sizes = {0, 1, 1, 2, 2, 3, 4, 4, 4, 6, 8, 8, 16};
  return r.pick(sizes);
}

Shape Gen::shape(int min_rank, int max_rank) {
  int rank = r.range(min_rank, max_rank);
  Shape s;
  for (int i = 0; i < rank; ++i) s.push_back(size());
  // Keep values small: at most 512 elements.
  while (numel(s) > 512)
    for (auto& d : s) d = std::max<int64_t>(1, d / 2);
  return s;
}

DType Gen::dtype() {
  static const std::vector<DType> all = {bool_,   int8,    int16,   int32,   int64,    uint8,
                                         uint16,  uint32,  uint64,  float16, bfloat16, float32,
                                         float32, float32, float64, int32};
  return r.pick(all);
}
DType Gen::float_dtype() {
  static const std::vector<DType> f = {float16, bfloat16, float32, float32, float64};
  return r.pick(f);
}
DType Gen::int_dtype() {
  static const std::vector<DType> i = {int8,  int16,  int32,  int32, int64,
                                       uint8, uint16, uint32, uint64};
  return r.pick(i);
}

PartitionSpec Gen::spec(const Shape& shape, double invalid) {
  invalid *= 0.5;
  const MeshDef& m = mesh();
  int rank = static_cast<int>(shape.size());
  if (r.coin(invalid)) {
    switch (r.below(3)) {
      case 0:  // an axis the mesh does not have
        return rank ? PartitionSpec(std::vector<PartitionEntry>{PartitionEntry("w")})
                    : PartitionSpec(std::vector<PartitionEntry>{}, {"w"});
      case 1: {  // the same axis twice / one more entry than the rank
        std::vector<PartitionEntry> e(static_cast<size_t>(rank + 1), PartitionEntry());
        e[0] = PartitionEntry(m.names[0]);
        if (rank >= 1) e[1] = PartitionEntry(m.names[0]);
        return PartitionSpec(e);
      }
      default: {  // any axis on any dim, divisible or not
        std::vector<PartitionEntry> e;
        for (int i = 0; i < rank; ++i) e.emplace_back(r.coin(0.5) ? r.pick(m.names) : "");
        return PartitionSpec(e);
      }
    }
  }
  std::vector<std::string> free = m.names;
  std::vector<PartitionEntry> e;
  for (int d = 0; d < rank; ++d) {
    if (free.empty() || r.coin(0.45)) {
      e.emplace_back();
      continue;
    }
    // An axis whose size divides the dim (rarely any axis: an indivisible spec).
    std::vector<std::string> fits;
    for (const auto& a : free) {
      int sz = m.sizes[static_cast<size_t>(std::find(m.names.begin(), m.names.end(), a) -
                                           m.names.begin())];
      if (shape[static_cast<size_t>(d)] % sz == 0) fits.push_back(a);
    }
    if (fits.empty() && !r.coin(0.03)) {
      e.emplace_back();
      continue;
    }
    Axes chosen{r.pick(fits.empty() ? free : fits)};
    if (free.size() >= 2 && r.coin(0.15)) {
      for (const auto& a : free)
        if (a != chosen[0]) {
          chosen.push_back(a);
          break;
        }
    }
    for (const auto& a : chosen) free.erase(std::find(free.begin(), free.end(), a));
    e.emplace_back(chosen.size() == 1 ? PartitionEntry(chosen[0]) : PartitionEntry(chosen));
  }
  // Trailing unsharded entries are optional.
  while (!e.empty() && e.back().is_none() && r.coin(0.5)) e.pop_back();
  return PartitionSpec(e);
}

PartitionSpec Gen::out_spec(const Shape& shape, double unreduced) {
  PartitionSpec p = spec(shape, 0.04);
  if (r.coin(unreduced) || r.coin(0.04)) {
    std::set<std::string> used;
    for (const auto& a : p.partition_axes()) used.insert(a);
    std::vector<std::string> free;
    for (const auto& a : mesh().names)
      if (!used.count(a)) free.push_back(a);
    if (free.empty()) return p;
    std::set<std::string> u{r.pick(free)};
    if (r.coin(0.2)) return p.with_sets({}, u);  // Reduced
    UnreducedKind k =
        r.coin(0.8) ? UnreducedKind::Sum : (r.coin(0.5) ? UnreducedKind::Max : UnreducedKind::Min);
    return p.with_sets(u, {}, k);
  }
  return p;
}

std::optional<PartitionSpec> Gen::maybe_spec(const Shape& shape, double unreduced) {
  if (r.coin(0.5)) return std::nullopt;
  return out_spec(shape, unreduced);
}

namespace {
std::vector<double> draw_values(Rng& r, DType dt, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  bool specials = is_floating(dt) && r.coin(0.15);
  for (auto& x : v) {
    if (dt == bool_) {
      x = r.below(2);
    } else if (is_unsigned(dt)) {
      x = r.range(0, 9);
    } else if (is_integer(dt)) {
      x = r.range(-6, 6);
    } else {
      // Quarters: exact in every float type, so sums are exact in any order.
      x = r.range(-12, 12) / 4.0;
      if (specials && r.coin(0.1)) {
        static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0};
        x = sp[r.below(4)];
      }
    }
  }
  return v;
}
}  // namespace

int Gen::input(const Shape& shape, DType dtype, bool sharded) {
  InputDef in;
  in.shape = shape;
  in.dtype = dtype;
  if (sharded && r.coin(0.85)) in.spec = operand_spec(shape);
  in.values = draw_values(r, dtype, numel(shape));
  in.oracle = array<double>(in.values, shape).astype(dtype);
  c.inputs.push_back(std::move(in));
  shadow_in.emplace_back();
  return static_cast<int>(c.inputs.size()) - 1;
}

PartitionSpec Gen::operand_spec(const Shape& s) {
  if (!xspec || r.coin(0.4)) return spec(s, 0.03);
  const auto& xe = xspec->entries();
  int rank = static_cast<int>(s.size()), xr = static_cast<int>(xe.size());
  std::vector<PartitionEntry> e;
  for (int d = 0; d < rank; ++d) {
    int xd = xr - rank + d;  // trailing alignment, as broadcasting
    PartitionEntry pe;
    if (xd >= 0 && s[static_cast<size_t>(d)] != 1) {
      int64_t f = 1;
      for (const auto& a : xe[static_cast<size_t>(xd)].axes())
        f *= mesh().sizes[static_cast<size_t>(
            std::find(mesh().names.begin(), mesh().names.end(), a) - mesh().names.begin())];
      if (s[static_cast<size_t>(d)] % f == 0) pe = xe[static_cast<size_t>(xd)];
    }
    e.push_back(pe);
  }
  return PartitionSpec(e);
}

Shape Gen::bcast_shape(const Shape& s) {
  Shape o = s;
  if (r.coin(0.3)) return o;
  for (auto& d : o)
    if (r.coin(0.3)) d = 1;
  int drop = r.below(static_cast<int>(o.size()) + 1);
  if (r.coin(0.5)) o.erase(o.begin(), o.begin() + drop);
  if (r.coin(0.05) && !o.empty()) o[0] += 1;  // incompatible
  if (r.coin(0.05)) o.insert(o.begin(), 2);   // higher rank than x
  return o;
}

std::string Case::program() const {
  std::ostringstream os;
  os << "case seed=" << seed << " index=" << index
     << " mesh=" << meshes()[static_cast<size_t>(mesh)].str() << "\n";
  for (size_t k = 0; k < inputs.size(); ++k)
    os << "  in" << k << ": " << dtype_name(inputs[k].dtype) << str(inputs[k].shape)
       << " spec=" << str(inputs[k].spec) << "\n";
  os << "  x = in0\n";
  for (const auto& s : steps) os << "  x = " << s.text << "\n";
  return os.str();
}

std::string Case::ops() const {
  std::string s;
  for (const auto& st : steps) {
    s += (s.empty() ? "" : ",") + st.op;
    for (const auto& o : st.inner) s += "," + o;
  }
  return s;
}

std::string error_class(const std::exception_ptr& e);

namespace {
// vocab_refused.cpp's entries: all drawn as AD constructs; the last three wrap sub-chains.
bool refused_entry(const OpDef& d, bool composites_only) {
  static const std::set<std::string> wrap = {"jacrev(chain)", "checkpoint(cond)",
                                             "scan(checkpoint)"};
  static const std::set<std::string> plain = {"reduced_operand", "reshard_reduced"};
  return wrap.count(d.name) > 0 || (!composites_only && plain.count(d.name) > 0);
}
bool composite(const OpDef& d) {
  static const std::set<std::string> names = {
      "checkpoint", "jit",        "custom_jvp(chain)", "custom_vjp(chain)", "vmap(chain)",
      "cond",       "map(chain)", "fori_loop(chain)",  "while_loop(chain)"};
  return names.count(d.name) > 0 || refused_entry(d, true);
}
// The autodiff and transform entries (shard_map too), drawn more often than their share
// of the table.
bool autodiff(const OpDef& d) {
  static const std::set<std::string> names = {"stop_gradient",
                                              "custom_jvp",
                                              "custom_vjp",
                                              "checkpoint",
                                              "jit",
                                              "custom_jvp(chain)",
                                              "custom_vjp(chain)",
                                              "vmap(chain)",
                                              "shard_map",
                                              "shard_map@auto",
                                              "cond",
                                              "map(chain)",
                                              "fori_loop(chain)",
                                              "while_loop(chain)",
                                              "vmap_collective_ad"};
  return names.count(d.name) > 0 || refused_entry(d, false);
}
}  // namespace

const OpDef& Gen::pick_op() {
  const auto& vocab = vocabulary();
  static const std::vector<const OpDef*> linear = [&] {
    std::vector<const OpDef*> l;
    for (const auto& d : vocab)
      if (d.linear) l.push_back(&d);
    return l;
  }();
  static const std::vector<const OpDef*> ad = [&] {
    std::vector<const OpDef*> l;
    for (const auto& d : vocab)
      if (autodiff(d)) l.push_back(&d);
    return l;
  }();
  for (;;) {
    const OpDef* d = (unreduced && r.coin(0.7)) ? r.pick(linear)
                     : r.coin(0.1)              ? r.pick(ad)
                                                : &r.pick(vocab);
    if (!composite(*d) || depth < 2) return *d;
  }
}

Step Gen::draw_step(const OpDef& d) {
  unreduced = false;
  Step s = d.draw(*this);
  s.op = d.name;
  c.reorders = c.reorders || d.reorders;
  return s;
}

void Gen::shadow_inputs() {
  for (size_t k = 0; k < c.inputs.size(); ++k)
    if (!shadow_in[k].valid()) try {
        const auto& in = c.inputs[k];
        shadow_in[k] = device_put(in.oracle, NamedSharding(*shadow_mesh, in.spec ? *in.spec : P()));
      } catch (const std::exception&) {
        shadow_ok = false;
      }
}

void Gen::advance(const Step& s) {
  shadow_inputs();
  if (shadow_ok) try {
      Ctx sctx;
      sctx.oracle = false;
      MeshScope scope(*shadow_mesh);
      sx = s.fn(sctx, sx, shadow_in);
      xspec = typeof(sx).sharding.spec();
    } catch (const std::exception&) {
      shadow_ok = false;
    }
  if (!shadow_ok) xspec.reset();
  Ins in;
  for (const auto& i : c.inputs) in.push_back(i.oracle);
  Array y = s.fn(Ctx{}, x, in);  // throws when the oracle refuses
  y.block_until_ready();
  x = y;
  c.dtypes.push_back(y.dtype());
}

Case generate(uint64_t seed, int64_t index) {
  Case c;
  c.seed = seed;
  c.index = index;
  Rng r{seed * 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ULL};
  r.next();
  c.mesh = r.below(static_cast<int>(meshes().size()));
  Gen g(r, c);
  g.input(g.shape(), g.dtype());
  g.x = c.inputs[0].oracle;
  // The shadow: the sharded eager run, step by step, so that draws can see x's layout.
  const MeshDef& md = meshes()[static_cast<size_t>(c.mesh)];
  g.shadow_mesh = make_mesh(md.sizes, md.names);
  g.shadow_inputs();
  if (g.shadow_ok) {
    g.sx = g.shadow_in[0];
    g.xspec = typeof(g.sx).sharding.spec();
  }
  int n = r.coin(0.3) ? 1 : r.range(2, 3);
  for (int k = 0; k < n; ++k) {
    c.steps.push_back(g.draw_step(g.pick_op()));
    try {
      g.advance(c.steps.back());
    } catch (...) {
      c.oracle_ok = false;
      c.oracle_err_class = error_class(std::current_exception());
      try {
        throw;
      } catch (const std::exception& e) {
        c.oracle_err = e.what();
      } catch (...) {
        c.oracle_err = "(not a std::exception)";
      }
      return c;
    }
  }
  c.oracle_out = g.x;
  return c;
}

}  // namespace fuzz
