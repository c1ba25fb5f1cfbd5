#pragma once
// The one parser of TSR_* environment variables: a value that is set but not
// what the variable expects is a ValueError, never silently ignored.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace tsr::detail {

/** What a TSR_* integer variable means and accepts, for its error message. */
struct EnvSpec {
  const char* name;    /**< "TSR_COMM_TIMEOUT_MS" */
  int64_t lo;          /**< smallest accepted value */
  int64_t hi;          /**< largest accepted value */
  const char* op;      /**< the call that reads it, for "[op]" */
  const char* meaning; /**< "milliseconds a collective waits for its peers" */
  const char* example; /**< a good value, "120000" */
};

/** The variable's integer value, or nullopt when unset; ValueError naming the
 *  variable, its value and the accepted range when it is not a decimal integer in
 *  [lo, hi]. */
std::optional<int64_t> env_int(const EnvSpec& spec);
/** The index in `choices` of a word-valued variable, or nullopt when unset; ValueError
 *  naming the variable, its value and the words accepted otherwise. */
std::optional<size_t> env_choice(const char* name, const char* op, const char* meaning,
                                 std::initializer_list<const char*> choices);
/** A 0/1 switch (false when unset), parsed by env_int. */
bool env_flag(const char* name, const char* op, const char* meaning);

}  // namespace tsr::detail
