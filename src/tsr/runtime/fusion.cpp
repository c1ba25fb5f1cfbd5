#include "tsr/runtime/fusion.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "tsr/backends/fused.h"
#include "tsr/error.h"
#include "tsr/prims/elementwise.h"
#include "tsr/runtime/env.h"
#include "tsr/runtime/executable.h"

namespace tsr::detail {

std::vector<ArrayType> FusedElementwise::infer(const std::vector<ArrayType>&) const {
  // Made by the lowering from steps whose types are already known; never traced.
  throw RuntimeError(
      "[fused_elementwise] internal primitive traced. Got a call to infer; expected the "
      "fusion pass to create it after type inference. Report this as a Tessera bug.");
}

std::string FusedElementwise::params() const {
  std::string s;
  for (const auto& m : members) s += (s.empty() ? "" : ",") + std::string(m.prim->name());
  return "ops=" + s + " block=" + std::to_string(block);
}

namespace {

using Step = Executable::Step;

// Elements below which a chain is left unfused: a few blocks do not pay the pass.
constexpr int64_t kMinFuse = int64_t{1} << 15;
// Elements per block: a handful of float blocks stay in L1/L2 across the chain.
constexpr int64_t kBlock = 4096;

bool fusion_on() {
  static const bool on = [] {
    auto v = env_int({"TSR_FUSION", 0, 1, "jit",
                      "1 fuses chains of elementwise ops into one blocked loop, 0 does not", "1"});
    return !v || *v == 1;
  }();
  return on;
}

// The local element count a fusable step computes over, or -1.
int64_t fusable(const Step& st) {
  if (!st.fn || st.plan || st.ctl || st.alias || st.coll != Step::Coll::None || !st.prim) return -1;
  if (st.outs.size() != 1 || !st.in_origins.empty()) return -1;  // origins: unused by these kernels
  const Primitive& p = *st.prim;
  bool elementwise = dynamic_cast<const prim::Unary*>(&p) ||
                     dynamic_cast<const prim::Binary*>(&p) ||
                     dynamic_cast<const prim::IntegerPow*>(&p) ||
                     std::string_view(p.name()) == "convert_element_type";
  if (!elementwise) return -1;
  const Shape& os = st.out_local[0].shape;
  int64_t n = numel(os);
  if (n < kMinFuse) return -1;
  for (const auto& t : st.in_local)
    if (!(t.shape == os || t.shape.empty())) return -1;  // broadcasts other than scalars
  // The fused kernel's blocks are sized for items up to 8 bytes; complex runs alone.
  for (const auto* ts : {&st.in_local, &st.out_local})
    for (const auto& t : *ts)
      if (is_complex(t.dtype)) return -1;
  return n;
}

// A step with no inputs that makes a scalar (a constant's `full`): it can run before
// the chain it sits in.
bool hoistable(const Step& st) {
  return st.fn && !st.plan && !st.ctl && !st.alias && st.coll == Step::Coll::None &&
         st.ins.empty() && st.outs.size() == 1 && st.out_local[0].shape.empty();
}

// A scalar operand stays rank 0 per block; everything else becomes a 1-D run.
std::vector<LocalType> block_types(const std::vector<LocalType>& full, int64_t len) {
  std::vector<LocalType> out;
  for (const auto& t : full) out.push_back({t.shape.empty() ? Shape{} : Shape{len}, t.dtype});
  return out;
}

// Replaces the fusable steps in [first, last) by one fused step.
Step make_fused(const Executable& ex, const std::vector<Step>& steps, size_t first, size_t last,
                const std::vector<int>& uses_outside, int64_t n) {
  auto f = std::make_shared<FusedElementwise>();
  f->n = n;
  f->block = kBlock;
  Step fused;
  fused.fn = find_kernel("fused_elementwise",
                         steps[first].mesh ? backend_name(steps[first].mesh->devices()) : "cpu");
  fused.mesh = steps[first].mesh;
  std::map<int, FusedElementwise::Ref> where;  // value -> its place in the fused step
  const std::set<int> program_outputs(ex.outputs.begin(), ex.outputs.end());
  for (size_t s = first; s < last; ++s) {
    const Step& st = steps[s];
    if (fusable(st) < 0) continue;  // a hoisted constant
    FusedElementwise::Member m;
    m.fn = st.fn;
    m.prim = st.prim;
    for (size_t i = 0; i < st.ins.size(); ++i) {
      int v = st.ins[i];
      if (!where.count(v)) {
        FusedElementwise::Ref r{FusedElementwise::Ref::Kind::In, static_cast<int>(fused.ins.size()),
                                st.in_local[i].shape.empty(),
                                static_cast<size_t>(itemsize(st.in_local[i].dtype))};
        where[v] = r;
        fused.ins.push_back(v);
        fused.in_local.push_back(st.in_local[i]);
      }
      m.ins.push_back(where[v]);
    }
    int v = st.outs[0];
    FusedElementwise::Ref r;
    r.itemsize = static_cast<size_t>(itemsize(st.out_local[0].dtype));
    if (uses_outside[static_cast<size_t>(v)] > 0 || program_outputs.count(v)) {
      r.kind = FusedElementwise::Ref::Kind::Out;
      r.index = static_cast<int>(fused.outs.size());
      fused.outs.push_back(v);
      fused.out_local.push_back(st.out_local[0]);
    } else {
      r.kind = FusedElementwise::Ref::Kind::Tmp;
      r.index = static_cast<int>(f->tmp_bytes.size());
      f->tmp_bytes.push_back(static_cast<size_t>(kBlock) * r.itemsize);
    }
    where[v] = r;
    m.outs.push_back(r);
    int64_t tail = n % kBlock ? n % kBlock : kBlock;
    m.blk_in = block_types(st.in_local, kBlock);
    m.blk_out = block_types(st.out_local, kBlock);
    m.tail_in = block_types(st.in_local, tail);
    m.tail_out = block_types(st.out_local, tail);
    f->members.push_back(std::move(m));
  }
  fused.prim = std::move(f);
  return fused;
}

}  // namespace

void fuse_elementwise(Executable& ex) {
  if (!fusion_on()) return;
  std::vector<Step>& steps = ex.steps;
  // Candidate runs: consecutive fusable steps on one mesh over one local size.
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t s = 0; s < steps.size();) {
    int64_t n = fusable(steps[s]);
    size_t e = s + 1, members = 1;
    if (n > 0)
      for (size_t k = e; k < steps.size(); ++k) {
        bool member = fusable(steps[k]) == n && steps[k].mesh == steps[s].mesh;
        if (!member && !hoistable(steps[k])) break;
        if (member) {
          ++members;
          e = k + 1;  // a run ends at a member, never at a hoisted constant
        }
      }
    if (n > 0 && members >= 2) runs.emplace_back(s, e);
    s = e;
  }
  if (runs.empty()) return;
  // Uses of each value by any step, counted once; a run subtracts its own to find
  // the values used outside it (those need full buffers).
  std::vector<int> uses(ex.values.size(), 0);
  for (const auto& st : steps)
    for (int v : st.ins) ++uses[static_cast<size_t>(v)];
  std::vector<Step> out;
  size_t next = 0;
  for (const auto& [first, last] : runs) {
    std::vector<int> outside = uses;
    for (size_t s = first; s < last; ++s)
      for (int v : steps[s].ins) --outside[static_cast<size_t>(v)];
    while (next < first) out.push_back(std::move(steps[next++]));
    for (size_t s = first; s < last; ++s)
      if (fusable(steps[s]) < 0) out.push_back(steps[s]);  // constants run first
    out.push_back(make_fused(ex, steps, first, last, outside, fusable(steps[first])));
    next = last;
  }
  while (next < steps.size()) out.push_back(std::move(steps[next++]));
  steps = std::move(out);
}

}  // namespace tsr::detail
