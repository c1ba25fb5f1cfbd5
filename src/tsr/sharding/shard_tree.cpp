// device_put and shard over trees: one device_put per leaf, with errors that name
// the leaf that could not take its placement.
#include "tsr/error.h"
#include "tsr/shard.h"

namespace tsr {

namespace {

std::string placement_str(const Placement& p) {
  if (const auto* ps = std::get_if<PartitionSpec>(&p)) return ps->repr();
  if (const auto* ns = std::get_if<NamedSharding>(&p)) return ns->str();
  if (const auto* d = std::get_if<Device>(&p)) return d->str();
  return "the default placement";
}

// Keeps the error's class (IndivisibleError stays one) with the new text.
[[noreturn]] void rethrow_as(const Error& e, const std::string& msg) {
  if (dynamic_cast<const IndivisibleError*>(&e)) throw IndivisibleError(msg);
  if (dynamic_cast<const DuplicateSpecError*>(&e)) throw DuplicateSpecError(msg);
  if (dynamic_cast<const ShardingTypeError*>(&e)) throw ShardingTypeError(msg);
  if (dynamic_cast<const TypeError*>(&e)) throw TypeError(msg);
  if (dynamic_cast<const RuntimeError*>(&e)) throw RuntimeError(msg);
  if (dynamic_cast<const BackendError*>(&e)) throw BackendError(msg);
  throw ValueError(msg);
}

std::string leaf_name(const std::string& path) {
  return path.empty() ? "leaf (the whole value)" : "leaf '" + path + "'";
}

// Leaf i of s; its key path is built only for an error.
Array place_one(const Array& x, const Placement& where, const tree::Structure& s,
                const std::string& root, size_t i, const char* api) {
  auto path = [&] { return s.paths(root)[i]; };
  if (!x.valid())
    throw ValueError(std::string("[") + api + "] " + leaf_name(path()) +
                     " is an empty Array handle. Got a default-constructed Array; expected an "
                     "array made by an op. Fill that leaf before placing the tree.");
  try {
    return device_put(x, where);
  } catch (const Error& e) {
    std::string reason = e.what();
    if (!reason.empty() && reason[0] == '[') {
      size_t close = reason.find("] ");
      if (close != std::string::npos) reason = reason.substr(close + 2);
    }
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    rethrow_as(e, std::string("[") + api + "] " + leaf_name(path()) + " (" + x.type().str() +
                      ") cannot take " + placement_str(where) + ": " + reason +
                      ". Give that leaf a placement it can take: a policy (path, type) -> "
                      "Placement can choose by rank or by path (P() replicates any rank, "
                      "P(\"axis\") needs rank >= 1).");
  }
}

}  // namespace

namespace detail {

std::vector<Array> place_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const std::vector<Placement>& where, const char* api,
                                const std::string& root) {
  std::vector<Array> out;
  out.reserve(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i)
    out.push_back(place_one(leaves[i], where[i], s, root, i, api));
  return out;
}

std::vector<Array> place_leaves(const std::vector<Array>& leaves, const tree::Structure& s,
                                const ShardPolicy& policy, const char* api,
                                const std::string& root) {
  std::vector<std::string> paths = s.paths(root);
  std::vector<Array> out;
  out.reserve(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].valid()) place_one(leaves[i], {}, s, root, i, api);  // raises
    out.push_back(place_one(leaves[i], policy(paths[i], leaves[i].type()), s, root, i, api));
  }
  return out;
}

}  // namespace detail

ShardPolicy batch_sharding(const std::string& axis) {
  return [axis](const std::string&, const ArrayType& t) -> Placement {
    return t.ndim() == 0 ? P() : P(axis);
  };
}

}  // namespace tsr
