#pragma once
// The process-wide compilation caches clear_caches() empties; each is defined beside
// the cache it clears.
namespace tsr::detail {

/** Drops every cached eager-op executable (bind.cpp). */
void clear_eager_cache();
/** Drops every live jit object's traced programs and executables (jit.cpp). */
void clear_jit_caches();

}  // namespace tsr::detail
