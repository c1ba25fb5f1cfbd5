// The communication report (lower(...).comm_report()): every step of a lowered program
// that moves bytes between devices, with what asked for it and whether the program
// wrote it (a reshard, a collective, specs) or the partitioner inserted it.
#include <algorithm>
#include <set>
#include <sstream>

#include "tsr/prims/collectives.h"
#include "tsr/prims/collectives_layout.h"
#include "tsr/runtime/executable.h"

namespace tsr {

std::string CommEvent::str() const {
  std::ostringstream os;
  os << kind << " over (";
  for (size_t i = 0; i < axes.size(); ++i) os << (i ? ", " : "") << "'" << axes[i] << "'";
  os << (axes.size() == 1 ? ",), " : "), ") << bytes_per_device << " B per device: " << cause
     << (implicit ? " [implicit]" : "");
  return os.str();
}

size_t CommReport::implicit_count() const {
  return static_cast<size_t>(
      std::count_if(events.begin(), events.end(), [](const CommEvent& e) { return e.implicit; }));
}

std::string CommReport::str() const {
  if (events.empty()) return "no communication\n";
  std::ostringstream os;
  for (const auto& e : events) os << e.str() << "\n";
  return os.str();
}

namespace detail {
namespace {

// Where each mesh axis sits in a layout: (dimension, position in its entry), or
// (-2, 0) for an unreduced axis, (-1, 0) for none.
std::pair<int, int> place_of(const NamedSharding& s, const std::string& a) {
  const PartitionSpec& p = s.spec();
  if (p.unreduced().count(a)) return {-2, 0};
  for (size_t d = 0; d < p.entries().size(); ++d) {
    const auto& ax = p.entries()[d].axes();
    for (size_t k = 0; k < ax.size(); ++k)
      if (ax[k] == a) return {static_cast<int>(d), static_cast<int>(k)};
  }
  return {-1, 0};
}

void add_steps(const Executable& ex, const std::string& where, std::vector<CommEvent>& out) {
  using C = Executable::Step::Coll;
  for (const auto& st : ex.steps) {
    if (st.ctl) {
      auto bodies = st.prim->bodies();
      for (size_t b = 0; b < st.ctl->subs.size(); ++b)
        add_steps(*st.ctl->subs[b],
                  where + (b < bodies.size() ? bodies[b].first : "body") + " of " +
                      st.prim->name() + ": ",
                  out);
      continue;
    }
    CommEvent e;
    e.cause = where + st.cause;
    e.implicit = st.implicit;
    if (st.plan) {
      if (!st.plan->comm && !st.plan->reduce) continue;  // a local slice or copy
      const auto& a = ex.values[static_cast<size_t>(st.ins[0])];
      const auto& b = ex.values[static_cast<size_t>(st.outs[0])];
      const Mesh& m = *a.layout.concrete_mesh();
      for (const auto& ax : m.axis_names())
        if (place_of(a.layout, ax) != place_of(b.layout, ax)) e.axes.push_back(ax);
      const bool r = st.plan->reduce;
      switch (st.plan->kind) {
        case PlanKind::Exchange:
          e.kind = r ? (st.plan->comm ? "all_reduce + all_to_all" : "all_reduce") : "all_to_all";
          break;
        case PlanKind::AllGather:
          e.kind = r ? "all_reduce + all_gather" : "all_gather";
          break;
        case PlanKind::ReduceScatter:
          e.kind = r ? "reduce_scatter + all_reduce" : "reduce_scatter";
          break;
      }
      e.bytes_per_device = static_cast<int64_t>(std::max(a.local_bytes, b.local_bytes));
      out.push_back(std::move(e));
      continue;
    }
    if (st.coll == C::None || st.coll == C::AxisIndex) continue;
    static const char* kinds[] = {
        "", "all_reduce", "", "all_gather", "reduce_scatter", "permute", "all_to_all", "broadcast"};
    e.kind = kinds[static_cast<int>(st.coll)];
    if (const auto* c = dynamic_cast<const prim::Collective*>(st.prim.get())) e.axes = c->axes();
    if (const auto* l = dynamic_cast<const prim::LayoutCollective*>(st.prim.get()))
      e.axes = l->p().axes;
    const auto& a = ex.values[static_cast<size_t>(st.ins[0])];
    const auto& b = ex.values[static_cast<size_t>(st.outs[0])];
    e.bytes_per_device = static_cast<int64_t>(std::max(a.local_bytes, b.local_bytes));
    out.push_back(std::move(e));
  }
}

}  // namespace

CommReport comm_report(const Executable& ex) {
  CommReport r;
  add_steps(ex, "", r.events);
  return r;
}

}  // namespace detail
}  // namespace tsr
