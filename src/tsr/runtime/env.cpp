#include "tsr/runtime/env.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tsr/error.h"

namespace tsr::detail {

std::optional<int64_t> env_int(const EnvSpec& spec) {
  const char* env = std::getenv(spec.name);
  if (!env) return std::nullopt;
  // from_chars: no leading blanks or '+', no trailing text, overflow reported.
  int64_t v = 0;
  const char* end = env + std::strlen(env);
  auto [ptr, ec] = std::from_chars(env, end, v);
  if (ec != std::errc() || ptr != end || end == env || v < spec.lo || v > spec.hi)
    throw ValueError(std::string("[") + spec.op + "] the environment variable " + spec.name +
                     " is not valid. Got '" + env + "'; expected an integer in [" +
                     std::to_string(spec.lo) + ", " + std::to_string(spec.hi) + "] (" +
                     spec.meaning + "). Set it to e.g. " + spec.example + ", or unset it.");
  return v;
}

std::optional<size_t> env_choice(const char* name, const char* op, const char* meaning,
                                 std::initializer_list<const char*> choices) {
  const char* env = std::getenv(name);
  if (!env) return std::nullopt;
  std::string words;
  size_t i = 0;
  for (const char* c : choices) {
    if (std::strcmp(env, c) == 0) return i;
    words += (i++ ? ", " : "") + std::string(c);
  }
  throw ValueError(std::string("[") + op + "] the environment variable " + name +
                   " is not valid. Got '" + env + "'; expected one of " + words + " (" + meaning +
                   "). Set it to one of those, or unset it.");
}

bool env_flag(const char* name, const char* op, const char* meaning) {
  return env_int({name, 0, 1, op, meaning, "1"}).value_or(0) != 0;
}

}  // namespace tsr::detail
