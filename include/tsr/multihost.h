#pragma once
/** Utilities for many processes (jax.experimental.multihost_utils). Every process
 *  calls each of them, in the same order; each waits at most TSR_COMM_TIMEOUT for the
 *  others and raises CommError naming a process that does not come. In one process
 *  they are cheap local operations. */
#include <optional>
#include <string>

#include "tsr/array.h"

namespace tsr::multihost {

/** Every process's x on every process, on this process's first device: stacked on a
 *  new leading axis of size process_count() (tiled=false) or concatenated along axis 0
 *  (tiled=true; a scalar is treated as shape (1,)). A global array spanning processes
 *  gives its whole value, and needs tiled=true (ValueError otherwise, as JAX). The
 *  shapes and dtypes must agree across processes (ValueError naming them). */
Array process_allgather(const Array& x, bool tiled = false);
/** The source process's x on every process (this process's first device). The source
 *  is process 0 unless is_source is given; exactly one process may say true
 *  (ValueError otherwise: JAX sums several sources). */
Array broadcast_one_to_all(const Array& x, std::optional<bool> is_source = {});
/** A barrier over every process that checks they all pass the same name: AssertionError
 *  "sync_global_devices name mismatch" naming both otherwise. Unlike JAX it times out. */
void sync_global_devices(const std::string& name);
/** AssertionError `fail_message`. Expected: ...; got: ... unless x (this process's
 *  value, read whole) is equal on every process. */
void assert_equal(const Array& x, const std::string& fail_message = "");

/** This process's piece `local` (split over global_mesh.local_mesh() by pspec) as the
 *  global array on global_mesh: each dim grows by the global over the local sizes of
 *  its spec's axes. An input that is not fully addressable comes back unchanged.
 *  ValueError: pspec nullopt (JAX's text; use P() to replicate), local devices not a
 *  block of the mesh. Replicated dims must hold the same data on every process. */
Array host_local_array_to_global_array(const Array& local, const Mesh& global_mesh,
                                       const std::optional<PartitionSpec>& pspec);
/** The inverse: this process's blocks of `global` (put on NamedSharding(global_mesh,
 *  pspec) first when laid out otherwise, a collective) as an array on
 *  global_mesh.local_mesh(), without a copy. Fully addressable input: unchanged. */
Array global_array_to_host_local_array(const Array& global, const Mesh& global_mesh,
                                       const std::optional<PartitionSpec>& pspec);

}  // namespace tsr::multihost
