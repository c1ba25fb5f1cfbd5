// The checked calls between the typed trees and the flat transforms, and the
// helpers every transform shares (argument checks, slots, the step count).
#include <tsr/error.h>
#include <tsr/ops.h>
#include <tsr/optim.h>
#include <tsr/tree.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tsr/optim/common.h"

namespace tsr::optim {

void ScalarOrSchedule::check_schedule() const {
  if (!schedule_)
    throw ValueError(
        "[optim] a learning rate or decay schedule is empty. Got an empty std::function; "
        "expected a callable Array(const Array& count). Pass a schedule such as "
        "optim::constant_schedule(1e-3), or a plain number.");
}

namespace detail {
namespace {

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << ']';
  return o.str();
}

// One slot per parameter leaf is what lets State<P> rebuild slots as P trees.
void check_slots(const TxState& s, size_t n, const GradientTransformation& tx, const char* api,
                 const char* when) {
  for (const auto& [k, l] : s.slots)
    if (l.size() != n)
      throw ValueError(std::string("[") + api + "] transform '" + tx.name + "' " + when +
                       " slot '" + k + "' with " + std::to_string(l.size()) + " arrays. Got " +
                       std::to_string(l.size()) + "; expected " + std::to_string(n) +
                       ", one per parameter leaf. Fix the transform to keep one slot "
                       "Array per parameter.");
}

void check_callable(const GradientTransformation& tx, const char* api) {
  if (!tx.init || !tx.update)
    throw ValueError(std::string("[") + api + "] the GradientTransformation '" + tx.name +
                     "' has no " + (tx.init ? "update" : "init") +
                     " function. Got an empty std::function; expected both init and "
                     "update. Build it with optim::adam, optim::chain, ... or set both.");
}

}  // namespace

std::string num(double v) { return tree::detail::repr_double(v); }

void check_finite(double v, const std::string& api, const char* what) {
  if (!std::isfinite(v))
    throw ValueError("[" + api + "] " + what + " must be a finite number. Got " + what + "=" +
                     num(v) + "; expected a finite value. Pass a finite " + what + ".");
}

void check_in(double v, double lo, double hi, bool hi_closed, const std::string& api,
              const char* what) {
  if (!(v >= lo && (hi_closed ? v <= hi : v < hi)))
    throw ValueError("[" + api + "] " + what + " is out of range. Got " + what + "=" + num(v) +
                     "; expected " + num(lo) + " <= " + what + (hi_closed ? " <= " : " < ") +
                     num(hi) + ". Pass a value in that range (optax's default is a good start).");
}

void check_rate(const ScalarOrSchedule& r, const std::string& api, const char* what) {
  if (!r.is_schedule()) check_finite(r.value(), api, what);
}

Array zeros_like_param(const Array& p) {
  // zeros_like keeps a concrete parameter's layout (Auto axes included); under jit the
  // slot's layout comes from propagation.
  return zeros_like(p);
}

Array zero_count(const std::vector<Array>& params) {
  if (!params.empty()) {
    const NamedSharding& s = params[0].sharding();
    if (s.concrete_mesh()) return zeros({}, int32, NamedSharding(*s.concrete_mesh(), P()));
  }
  return zeros({}, int32);
}

Array safe_increment(const Array& count) {
  const int64_t top = std::numeric_limits<int32_t>::max();
  return where(count < top, count + 1, count);
}

const std::vector<Array>& slot(const TxState& state, const std::string& key, size_t n,
                               const std::string& tx) {
  auto it = state.slots.find(key);
  if (it == state.slots.end()) {
    std::string have;
    for (const auto& [k, v] : state.slots) have += (have.empty() ? "'" : ", '") + k + "'";
    throw ValueError("[optim.update] the state has no slot '" + key + "' for transform '" + tx +
                     "'. Got slots {" + have + "}; expected '" + key +
                     "'. Pass the state that optim::init returned for this transform.");
  }
  if (it->second.size() != n)
    throw ValueError("[optim.update] state slot '" + key + "' of transform '" + tx + "' holds " +
                     std::to_string(it->second.size()) + " arrays. Got " +
                     std::to_string(it->second.size()) + "; expected " + std::to_string(n) +
                     ", one per update. Pass the state made by optim::init for these params.");
  return it->second;
}

const Array& scalar(const TxState& state, const std::string& key, const std::string& tx) {
  auto it = state.scalars.find(key);
  if (it == state.scalars.end())
    throw ValueError("[optim.update] the state has no scalar '" + key + "' for transform '" + tx +
                     "'. Got " + std::to_string(state.scalars.size()) + " scalars; expected '" +
                     key + "'. Pass the state that optim::init returned for this transform.");
  return it->second;
}

void check_counts(const std::vector<Array>& updates, const std::vector<Array>& params,
                  const std::string& tx) {
  if (!params.empty() && params.size() != updates.size())
    throw ValueError("[optim.update] transform '" + tx + "' got " + std::to_string(updates.size()) +
                     " updates and " + std::to_string(params.size()) + " params. Got " +
                     std::to_string(updates.size()) + "; expected " +
                     std::to_string(params.size()) +
                     ". Pass one update per parameter leaf, in the same order.");
}

TxState call_init(const GradientTransformation& tx, const std::vector<Array>& params,
                  const Paths& paths) {
  check_callable(tx, "optim.init");
  TxState s = tx.init(params, paths);
  check_slots(s, params.size(), tx, "optim.init", "made");
  return s;
}

std::pair<std::vector<Array>, TxState> call_update(const GradientTransformation& tx,
                                                   const std::vector<Array>& updates,
                                                   const TxState& state,
                                                   const std::vector<Array>& params,
                                                   const Paths& paths) {
  check_callable(tx, "optim.update");
  check_counts(updates, params, tx.name);
  auto r = tx.update(updates, state, params, paths);
  if (r.first.size() != updates.size())
    throw ValueError("[optim.update] transform '" + tx.name + "' returned " +
                     std::to_string(r.first.size()) + " updates. Got " +
                     std::to_string(r.first.size()) + "; expected " +
                     std::to_string(updates.size()) + ". Fix the transform's update.");
  check_slots(r.second, updates.size(), tx, "optim.update", "returned");
  return r;
}

void check_like_params(const tree::Structure& want, const std::vector<Array>& want_leaves,
                       const tree::Structure& got, const std::vector<Array>& got_leaves,
                       const char* api, const std::string& what, const std::string& root) {
  const bool slot = what.rfind("state slot", 0) == 0;
  const std::string fix = slot ? "Call optim::init(tx, params) for these params."
                               : "Pass " + what + " with the params' tree structure.";
  if (auto d = got.difference(want, /*compare_statics=*/false, root))
    throw ValueError(std::string("[") + api + "] " + what +
                     " and params differ in tree structure at " + d->path + ". Got " + d->ours +
                     "; expected " + d->theirs + ". " + fix);
  if (got_leaves.empty()) return;
  for (size_t i = 0; i < want_leaves.size() && i < got_leaves.size(); ++i) {
    if (got_leaves[i].shape() == want_leaves[i].shape()) continue;
    throw ValueError(
        std::string("[") + api + "] " + got.paths(root)[i] +
        " has another shape than its parameter. Got " + shape_str(got_leaves[i].shape()) +
        "; expected " + shape_str(want_leaves[i].shape()) + ". Pass " + (slot ? "a state" : what) +
        " shaped like the params (" + (slot ? "from optim::init" : "leaf for leaf") + ").");
  }
}

}  // namespace detail
}  // namespace tsr::optim
