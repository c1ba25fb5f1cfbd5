#pragma once
/** Tessera error types. Every user mistake raises one of these with a message
 *  of the form "[op] what is wrong. Got ...; expected .... How to fix." */
#include <stdexcept>
#include <string>

namespace tsr {

/** Base class of every error Tessera raises. */
class Error : public std::runtime_error {
 public:
  /** Builds an error with the full message text. */
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/** A bad argument value (wrong axis name, bad size, ...). */
class ValueError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A shape or dtype rule was violated. */
class TypeError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A traced value was used where a concrete one is needed: its data was read
 *  (to_vector, item) inside jit, grad, vmap or another transform (JAX's
 *  ConcretizationTypeError, a TypeError). */
class ConcretizationTypeError : public TypeError {
 public:
  /** Builds the error. */
  using TypeError::TypeError;
};

/** A traced array was converted to a C++ bool (`if (x > 0)` inside a transform):
 *  JAX's TracerBoolConversionError. Use cond / where / while_loop instead. */
class TracerBoolConversionError : public ConcretizationTypeError {
 public:
  /** Builds the error. */
  using ConcretizationTypeError::ConcretizationTypeError;
};

/** A sharding rule refused its inputs; the message says how to fix it. */
class ShardingTypeError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A rule or feature that does not exist (yet); names what is missing. */
class NotImplementedError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A backend (kernel table, allocator, device) failed. */
class BackendError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A collective failed: mismatched arguments, a failed peer or a timeout. */
class CommError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A check that acts as an assertion failed (with_sharding_constraint on an
 *  all-Explicit mesh, spec E28). */
class AssertionError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A call that needs state the program does not have (Python's RuntimeError):
 *  with_sharding_constraint with a PartitionSpec and no context mesh (spec §13.3). */
class RuntimeError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A NamedSharding maps one mesh axis to two dimensions (spec E18). */
class DuplicateSpecError : public ValueError {
 public:
  /** Builds the error. */
  using ValueError::ValueError;
};

/** An index is out of range, or an index expression is malformed (Python's IndexError). */
class IndexError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

/** A sharded dimension is not divisible by its tiling factor (spec E22). */
class IndivisibleError : public ValueError {
 public:
  /** Builds the error. */
  using ValueError::ValueError;
};

/** A collective names an axis no enclosing shard_map (or vmap) binds (Python's
 *  NameError, manual-spmd §4). */
class NameError : public Error {
 public:
  /** Builds the error. */
  using Error::Error;
};

}  // namespace tsr
