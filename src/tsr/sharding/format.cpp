#include "tsr/sharding/format.h"

namespace tsr::detail {
namespace {

template <typename T, typename F>
std::string tuple(const std::vector<T>& v, F&& render) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + render(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string names_tuple(const std::vector<std::string>& names) {
  return tuple(names, [](const std::string& n) { return "'" + n + "'"; });
}

std::string types_tuple(const std::vector<AxisType>& types) {
  return tuple(types, [](AxisType t) { return std::string(axis_type_name(t)); });
}

std::string ints_tuple(const std::vector<int64_t>& v) {
  return tuple(v, [](int64_t x) { return std::to_string(x); });
}

std::string ints_tuple(const std::vector<int>& v) {
  return tuple(v, [](int x) { return std::to_string(x); });
}

std::string quoted_set(const std::set<std::string>& s) {
  std::string out = "{";
  for (const auto& a : s) out += (out.size() > 1 ? ", '" : "'") + a + "'";
  return out + "}";
}

}  // namespace tsr::detail

namespace tsr::detail {
const char* unreduced_kind_name(UnreducedKind k) {
  switch (k) {
    case UnreducedKind::Sum:
      return "sum";
    case UnreducedKind::Max:
      return "max";
    case UnreducedKind::Min:
      return "min";
  }
  return "sum";
}
}  // namespace tsr::detail
