#pragma once
// Helpers shared by the optimizer sources (not installed): argument checks, state
// access with readable errors, and the slot and counter constructors.
#include <tsr/array.h>
#include <tsr/optim.h>

#include <cstddef>
#include <string>
#include <vector>

namespace tsr::optim::detail {

/** Shortest round-trip text of v, for messages. */
std::string num(double v);
/** ValueError unless v is finite. */
void check_finite(double v, const std::string& api, const char* what);
/** ValueError unless lo <= v < hi (v <= hi when hi_closed). */
void check_in(double v, double lo, double hi, bool hi_closed, const std::string& api,
              const char* what);
/** ValueError unless the schedule or constant is usable (finite constant). */
void check_rate(const ScalarOrSchedule& r, const std::string& api, const char* what);

/** Zeros shaped, typed and laid out like the parameter (its sharding kept even on
 *  Auto meshes, where zeros_like alone would replicate). */
Array zeros_like_param(const Array& p);
/** The int32 step count 0, replicated on the parameters' mesh when they have one. */
Array zero_count(const std::vector<Array>& params);
/** count + 1, saturating at the int32 maximum (optax's safe_increment). */
Array safe_increment(const Array& count);

/** state.slots[key], checked to hold n Arrays (`tx` names the transform in errors). */
const std::vector<Array>& slot(const TxState& state, const std::string& key, size_t n,
                               const std::string& tx);
/** state.scalars[key], checked to exist. */
const Array& scalar(const TxState& state, const std::string& key, const std::string& tx);
/** ValueError unless updates and (non-empty) params have equal counts. */
void check_counts(const std::vector<Array>& updates, const std::vector<Array>& params,
                  const std::string& tx);

}  // namespace tsr::optim::detail
