#include "tsr/runtime/step_trace.h"

#include <memory>
#include <sstream>

#include "tsr/core/primitive.h"
#include "tsr/prims/collectives.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/timeline.h"

namespace tsr::detail {
namespace {

using C = Executable::Step::Coll;

std::string local_types(const std::vector<LocalType>& ts, size_t& bytes) {
  std::string s;
  for (const auto& t : ts) {
    if (!s.empty()) s += ' ';
    s += dtype_short_name(t.dtype) + shape_str(t.shape);
    bytes += static_cast<size_t>(numel(t.shape)) * static_cast<size_t>(itemsize(t.dtype));
  }
  return s;
}

std::string id_list(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(device_at(ids[i]).id);  // runtime index -> id
  return s + "]";
}

const char* coll_name(C c) {
  switch (c) {
    case C::AllReduce:
      return "all_reduce";
    case C::AllGather:
      return "all_gather";
    case C::ReduceScatter:
      return "reduce_scatter";
    case C::Permute:
      return "ppermute";
    case C::AllToAll:
      return "all_to_all";
    case C::Broadcast:
      return "broadcast";
    default:
      return "collective";
  }
}

// The args every data movement carries: bytes, group, wait, what asked for it.
std::string movement_args(const char* kind, size_t bytes, const std::vector<int>& group,
                          int64_t wait, const Executable::Step& st) {
  std::ostringstream os;
  os << "\"kind\":\"" << kind << "\",\"bytes\":" << bytes;
  if (!group.empty()) os << ",\"group\":\"" << id_list(group) << '"';
  os << ",\"wait_us\":" << static_cast<double>(wait) / 1000.0;
  if (!st.cause.empty()) os << ",\"cause\":\"" << timeline::json_escape(st.cause) << '"';
  if (st.implicit) os << ",\"implicit\":true";
  return os.str();
}

// timeline::StepFormat for an Executable's step.
void format_step(const void* exp, int step, int pos, int64_t wait, const char*& cat,
                 std::string& name, std::string& args) {
  const auto& ex = *static_cast<const Executable*>(exp);
  const Executable::Step& st = ex.steps[static_cast<size_t>(step)];
  const auto& vals = ex.values;
  if (st.ctl) {
    using K = Executable::Control::Kind;
    const K k = st.ctl->kind;
    cat = "control";
    name = k == K::Cond ? "cond" : k == K::While ? "while" : "scan";
    if (k == K::Scan) args = "\"length\":" + std::to_string(st.ctl->length);
    return;
  }
  if (st.coll != C::None) {
    const auto& in = vals[static_cast<size_t>(st.ins[0])];
    const auto& out = vals[static_cast<size_t>(st.outs[0])];
    const size_t bytes = st.coll == C::AllReduce ? out.local_bytes : in.local_bytes;
    const auto& group =
        st.coll_ids.empty() ? std::vector<int>{} : st.coll_ids[static_cast<size_t>(pos)];
    cat = "collective";
    name = coll_name(st.coll);
    args = movement_args(name.c_str(), bytes, group, wait, st);
    // The mesh axes the program named (psum(x, "x"), all_gather over ("a", "b"), ...).
    const std::vector<std::string>* axes = nullptr;
    if (const auto* c = dynamic_cast<const prim::Collective*>(st.prim.get())) axes = &c->axes();
    if (const auto* lc = dynamic_cast<const prim::LayoutCollective*>(st.prim.get()))
      axes = &lc->p().axes;
    if (axes) {
      std::string list;
      for (const auto& a : *axes) list += (list.empty() ? "" : ",") + timeline::json_escape(a);
      args += ",\"axes\":\"" + list + '"';
    }
    return;
  }
  if (st.plan) {
    const Plan& pl = *st.plan;
    const DevicePlan& dp = pl.dev[static_cast<size_t>(pos)];
    const size_t bytes =
        static_cast<size_t>(numel(pl.dst_local)) * static_cast<size_t>(itemsize(pl.dtype));
    const std::vector<int>& group = !dp.coll_ids.empty() ? dp.coll_ids : dp.reduce_ids;
    cat = pl.comm ? "collective" : "copy";
    name = "reshard";
    args = movement_args(pl.comm ? "reshard" : "local copy", bytes, group, wait, st);
    args += ",\"sent_bytes\":" + std::to_string(dp.send_bytes) +
            ",\"received_bytes\":" + std::to_string(dp.recv_bytes);
    return;
  }
  size_t bytes = 0;
  std::string ins = local_types(st.in_local, bytes);
  std::string outs = local_types(st.out_local, bytes);
  cat = "step";
  name = st.prim ? st.prim->name() : "kernel";
  args = "\"in\":\"" + ins + "\",\"out\":\"" + outs + "\",\"bytes\":" + std::to_string(bytes);
}

std::shared_ptr<const void> keep_executable(const void* exp) {
  return static_cast<const Executable*>(exp)->weak_from_this().lock();
}

}  // namespace

void trace_step(const Executable& ex, int step, int pos, int dev, int64_t t0, int64_t t1) {
  const Executable::Step& st = ex.steps[static_cast<size_t>(step)];
  if (st.alias || st.coll == C::AxisIndex) return;
  const bool moves = st.coll != C::None || st.plan;
  timeline::step(dev, t0, t1, &ex, step, pos, moves ? timeline::take_wait() : 0, format_step,
                 keep_executable);
}

}  // namespace tsr::detail
