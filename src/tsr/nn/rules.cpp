// Logical axis rules: names -> specs, placing Param trees, pinning activations.
#include <algorithm>
#include <set>
#include <sstream>
#include <typeinfo>

#include "tsr/error.h"
#include "tsr/nn/rules.h"
#include "tsr/ops.h"

namespace tsr::nn {

namespace {

std::string quoted_list(const std::vector<std::string>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", '" : "'") + v[i] + "'";
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string rule_str(const std::pair<std::string, std::vector<std::string>>& r) {
  return "'" + r.first + "' -> " + quoted_list(r.second);
}

std::string rules_label(const Rules& rules) {
  return rules.name.empty() ? std::string("(unnamed rules)") : "'" + rules.name + "'";
}

// Every rule's mesh axes exist in the mesh, once each: a typo or a preset meant for
// another mesh is refused even where no current dimension uses that rule.
void check_rules(const Rules& rules, const std::vector<std::string>& mesh_axes, const char* api) {
  for (const auto& r : rules.table) {
    std::set<std::string> seen;
    for (const std::string& a : r.second) {
      if (std::find(mesh_axes.begin(), mesh_axes.end(), a) == mesh_axes.end())
        throw ValueError(std::string("[") + api + "] rule " + rule_str(r) + " of rules " +
                         rules_label(rules) + " names mesh axis '" + a +
                         "', which the mesh lacks. Got mesh axes " + quoted_list(mesh_axes) +
                         "; expected every rule's mesh axes among them. Use a mesh with that "
                         "axis, or rules written for this mesh (rules_preset(\"dp\") needs "
                         "only 'data').");
      if (!seen.insert(a).second)
        throw ValueError(std::string("[") + api + "] rule " + rule_str(r) + " of rules " +
                         rules_label(rules) + " names mesh axis '" + a +
                         "' twice. Got it twice; expected each mesh axis at most once per rule. "
                         "Remove the repeat.");
    }
  }
}

// `open` (constrain): a dimension no rule maps (unnamed, no rule, or every axis of its
// rule taken by an earlier dimension) is UNCONSTRAINED, so the propagation pass may use
// idle mesh axes there; only a rule mapping to no axes pins it unsharded.
PartitionSpec to_spec(const Axes& names, const Rules& rules,
                      const std::vector<std::string>& mesh_axes, const char* api,
                      bool open = false) {
  check_rules(rules, mesh_axes, api);
  std::set<std::string> used;
  std::vector<PartitionEntry> entries;
  entries.reserve(names.size());
  for (const std::string& n : names) {
    std::vector<std::string> axes;
    bool pinned = false;  // a rule maps n to no mesh axes: unsharded even when open
    if (!n.empty()) {
      auto it = std::find_if(rules.table.begin(), rules.table.end(),
                             [&](const auto& r) { return r.first == n; });
      if (it != rules.table.end()) {
        pinned = it->second.empty();
        for (const std::string& a : it->second)
          if (used.insert(a).second) axes.push_back(a);  // a later dimension loses it
      }
    }
    if (axes.empty() && open && !pinned)
      entries.emplace_back(UNCONSTRAINED);
    else if (axes.empty())
      entries.emplace_back(nullptr);
    else if (axes.size() == 1)
      entries.emplace_back(axes[0]);
    else
      entries.emplace_back(axes);
  }
  return PartitionSpec(std::move(entries));
}

std::string names_str(const Axes& names) { return quoted_list(names); }

// The product of the sizes of the mesh axes of entry e.
int64_t entry_size(const PartitionEntry& e, const Mesh& mesh) {
  int64_t n = 1;
  for (const std::string& a : e.axes()) n *= mesh.axis_size(a);
  return n;
}

std::string mesh_str(const Mesh& mesh) {
  std::string s = "(";
  for (int i = 0; i < mesh.ndim(); ++i)
    s += (i ? ", '" : "'") + mesh.axis_names()[static_cast<size_t>(i)] +
         "': " + std::to_string(mesh.axis_sizes()[static_cast<size_t>(i)]);
  return s + ")";
}

// Why leaf x with these names cannot take its spec, or "" when it can.
std::string leaf_problem(const Array& x, const Axes* names, const PartitionSpec& spec,
                         const Mesh& mesh) {
  if (!x.valid()) return "is an empty Array handle (fill it before sharding)";
  if (names && static_cast<int>(names->size()) != x.ndim())
    return "has names " + names_str(*names) + " (" + std::to_string(names->size()) +
           ") for a rank-" + std::to_string(x.ndim()) + " value (give one name per dimension)";
  std::string why;
  for (int d = 0; d < spec.size(); ++d) {
    const PartitionEntry& e = spec.entries()[static_cast<size_t>(d)];
    int64_t k = entry_size(e, mesh), n = x.shape()[static_cast<size_t>(d)];
    if (k > 1 && n % k != 0)
      why += std::string(why.empty() ? "" : "; ") + "dimension " + std::to_string(d) + " ('" +
             (*names)[static_cast<size_t>(d)] + "', size " + std::to_string(n) +
             ") is not divisible by " + e.repr() + " (" + std::to_string(k) + " devices)";
  }
  return why;
}

}  // namespace

std::vector<std::string> rules_preset_names() { return {"dp", "tp", "fsdp", "dp+tp", "fsdp+tp"}; }

Rules rules_preset(const std::string& name) {
  using V = std::vector<std::string>;
  const V data{"data"}, model{"model"};
  Rules r{{}, name};
  bool batch = name == "dp" || name == "fsdp" || name == "dp+tp" || name == "fsdp+tp";
  bool embed = name == "fsdp" || name == "fsdp+tp";
  bool tp = name == "tp" || name == "dp+tp" || name == "fsdp+tp";
  if (!batch && !tp) {
    std::string valid;
    for (const std::string& n : rules_preset_names())
      valid += (valid.empty() ? "'" : ", '") + n + "'";
    throw ValueError("[nn.rules_preset] unknown preset '" + name + "'. Got '" + name +
                     "'; expected one of " + valid +
                     ". Pick one of those, or build a Rules table yourself.");
  }
  if (batch) r.table.push_back({"batch", data});
  if (embed) r.table.push_back({"embed", data});
  if (tp)
    for (const char* n : {"heads", "mlp", "vocab"}) r.table.push_back({n, model});
  return r;
}

PartitionSpec logical_to_spec(const Axes& names, const Rules& rules, const Mesh& mesh) {
  return to_spec(names, rules, mesh.axis_names(), "nn.logical_to_spec");
}

PartitionSpec logical_to_spec(const Axes& names, const Rules& rules, const AbstractMesh& mesh) {
  return to_spec(names, rules, mesh.axis_names(), "nn.logical_to_spec");
}

Array constrain(const Array& x, const Axes& names, const Rules& rules) {
  if (static_cast<int>(names.size()) != x.ndim())
    throw ValueError("[nn.constrain] names " + names_str(names) + " has " +
                     std::to_string(names.size()) + " entries for a value of type " +
                     x.type().str() + ". Got " + std::to_string(names.size()) +
                     " names; expected " + std::to_string(x.ndim()) +
                     " (one per dimension). Name every dimension (\"\" for none).");
  AbstractMesh mesh = get_abstract_mesh();
  if (mesh.empty() || mesh.size() <= 1) return x;
  return with_sharding_constraint(x,
                                  to_spec(names, rules, mesh.axis_names(), "nn.constrain", true));
}

namespace detail {

namespace {

bool is_param(const tree::Structure& s) {
  if (s.kind() != tree::Kind::Struct || s.name() != "Param" || s.num_children() != 2) return false;
  const auto& k = s.keys();
  if (k.size() != 2 || k[0] != "value" || k[1] != "names") return false;
  const tree::detail::StaticValue* v = s.child(1).static_value();
  return s.child(0).kind() == tree::Kind::Leaf && v && v->type() == typeid(Axes);
}

void walk(const tree::Structure& s, std::vector<const Axes*>& out) {
  if (s.kind() == tree::Kind::Leaf) {
    out.push_back(nullptr);
  } else if (is_param(s)) {
    out.push_back(static_cast<const Axes*>(s.child(1).static_value()->get()));
  } else {
    for (int i = 0; i < s.num_children(); ++i) walk(s.child(i), out);
  }
}

}  // namespace

std::vector<const Axes*> param_names(const tree::Structure& s) {
  std::vector<const Axes*> out;
  out.reserve(static_cast<size_t>(s.num_leaves()));
  walk(s, out);
  return out;
}

std::vector<std::pair<std::string, PartitionSpec>> leaf_specs(const tree::Structure& s,
                                                              const Rules& rules,
                                                              const Mesh& mesh) {
  check_rules(rules, mesh.axis_names(), "nn.logical_specs");
  std::vector<const Axes*> names = param_names(s);
  std::vector<std::string> paths = s.paths();
  std::vector<std::pair<std::string, PartitionSpec>> out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    out.emplace_back(paths[i],
                     names[i] ? to_spec(*names[i], rules, mesh.axis_names(), "nn.logical_specs")
                              : PartitionSpec());
  return out;
}

std::vector<Array> shard_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const Rules& rules, const Mesh& mesh) {
  const char* api = "nn.shard";
  check_rules(rules, mesh.axis_names(), api);
  std::vector<const Axes*> names = param_names(s);
  std::vector<std::string> paths;  // built only for an error
  auto path = [&](size_t i) {
    if (paths.empty()) paths = s.paths();
    return paths[i].empty() ? std::string("leaf (the whole value)") : "leaf '" + paths[i] + "'";
  };
  std::vector<std::string> problems;
  std::vector<Array> out(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& x = leaves[i];
    PartitionSpec spec = names[i] ? to_spec(*names[i], rules, mesh.axis_names(), api) : P();
    std::string why = leaf_problem(x, names[i], spec, mesh);
    std::string type = x.valid() ? x.type().str() : "<empty>";
    if (why.empty()) {
      try {
        out[i] = device_put(x, NamedSharding(mesh, spec));
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (!why.empty())
      problems.push_back(path(i) + " " + type +
                         (names[i] ? " names " + names_str(*names[i]) : std::string()) + " -> " +
                         spec.repr() + ": " + why);
  }
  if (problems.empty()) return out;
  std::ostringstream msg;
  msg << "[nn.shard] " << problems.size() << " of " << leaves.size()
      << " leaves cannot be placed by rules " << rules_label(rules) << " on mesh " << mesh_str(mesh)
      << ". Got:";
  for (const std::string& p : problems) msg << "\n  - " << p;
  msg << "\nExpected every sharded dimension divisible by the product of its mesh axes' "
         "sizes, and one name per dimension. Change those sizes (e.g. heads a multiple of "
         "the 'model' axis), or map the logical name to fewer mesh axes in the rules.";
  throw ValueError(msg.str());
}

}  // namespace detail

}  // namespace tsr::nn
