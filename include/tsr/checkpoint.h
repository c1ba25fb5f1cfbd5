#pragma once
/** Checkpoints (docs/design/0017-training-stack.md §Checkpoints): a tree of sharded
 *  arrays saved to a directory and restored onto any mesh.
 *
 *    ckpt::save("run/ckpt", state);                      // each distinct block once
 *    State s = ckpt::restore("run/ckpt", like);          // like: laid out where you want it
 *    std::cout << ckpt::inspect("run/ckpt").str();       // paths, dtypes, shapes, specs
 *
 *  A checkpoint directory holds `tensors.safetensors` (a real safetensors file: one
 *  tensor per distinct stored block, so a replicated leaf is written once and a sharded
 *  leaf once per block) and `checkpoint.json`, the sidecar (format version, mesh, and per
 *  leaf its path, dtype, shape, spec and each block's index box, tensor name, byte length
 *  and CRC-32). It is written into a temporary sibling directory, fsynced and renamed
 *  into place, the sidecar last: a directory without a sidecar is not a checkpoint.
 *
 *  The namespace is `ckpt`, not `checkpoint`: tsr::checkpoint is jax.checkpoint (remat),
 *  and C++ does not allow a namespace and a function of one name in one scope. */
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tsr/array.h"
#include "tsr/mesh.h"
#include "tsr/sharding.h"
#include "tsr/tree.h"

namespace tsr::ckpt {

/** The sidecar format version this library writes; a newer one is refused. */
inline constexpr int kFormatVersion = 1;

/** Options of save. */
struct SaveOptions {
  /** Replace a checkpoint already at the directory (atomically); false: ValueError. */
  bool overwrite = true;
};

/** Options of restore. */
struct RestoreOptions {
  /** A leaf stored in the checkpoint but absent from `like` is a ValueError (false:
   *  it is ignored, e.g. to restore the parameters out of a full training state). */
  bool strict = true;
  /** Check each stored block's CRC-32 (on by default; off trusts the storage and saves
   *  one pass over the bytes). The headers and the sidecar are always checked. */
  bool verify_checksums = true;
};

/** A mesh as the sidecar records it. */
struct MeshInfo {
  std::vector<std::string> axis_names; /**< axis names, in mesh order */
  std::vector<int> axis_sizes;         /**< axis sizes */
  std::vector<AxisType> axis_types;    /**< axis types */
  std::vector<int> device_ids;         /**< device ids, row-major */
  /** "('data': 4, 'model': 2)", or "(1 device)" for a mesh with no axes. */
  std::string str() const;
  /** Field-wise equality. */
  bool operator==(const MeshInfo&) const = default;
};

/** One stored block of a leaf: the part of the global array it holds and where. */
struct BlockInfo {
  std::vector<int64_t> start; /**< first index per dimension */
  std::vector<int64_t> stop;  /**< one past the last index per dimension */
  std::string tensor;         /**< its tensor name in its tensor file */
  /** Its tensor file: `tensors.safetensors`, or `tensors-p<k>.safetensors` for the blocks
   *  process k wrote in a save by many processes. */
  std::string file = "tensors.safetensors";
  int64_t nbytes = 0; /**< byte length */
  uint32_t crc32 = 0; /**< CRC-32 (zlib) of its bytes */
};

/** One saved leaf. */
struct LeafInfo {
  std::string path;              /**< key path in the tree: "params.layers[2].w" */
  DType dtype = DType::Float32;  /**< element type */
  Shape shape;                   /**< global shape */
  PartitionSpec spec;            /**< spec it was saved with, one entry per dimension */
  MeshInfo mesh;                 /**< mesh it was saved from */
  std::vector<BlockInfo> blocks; /**< its distinct blocks */
  /** Bytes of the logical value. */
  int64_t nbytes() const;
};

/** What a checkpoint holds (its sidecar), for printing and checks. */
struct Info {
  int format_version = kFormatVersion; /**< the sidecar's format version */
  MeshInfo mesh;                       /**< the mesh of the leaf on the most devices */
  std::vector<LeafInfo> leaves;        /**< leaves, in tree order */
  /** Bytes stored (every block once). */
  int64_t stored_bytes() const;
  /** A table: one line per leaf with path, type, spec and block count. */
  std::string str() const;
};

namespace detail {
/** save over flat leaves named by key paths. */
void save_leaves(const std::filesystem::path& dir, const std::vector<Array>& leaves,
                 const std::vector<std::string>& paths, const SaveOptions& opts);
/** restore over flat leaves: one array per `like` leaf, laid out as that leaf. */
std::vector<Array> restore_leaves(const std::filesystem::path& dir, const std::vector<Array>& like,
                                  const std::vector<std::string>& paths,
                                  const RestoreOptions& opts);
/** Deletes complete step checkpoints under root beyond the `keep` newest, never `saved`. */
void prune_steps(const std::filesystem::path& root, int keep, int64_t saved);
}  // namespace detail

/** Saves every Array leaf of `tree` (statics are not saved) to `dir`, atomically:
 *  each device's block once, a block replicated over mesh axes once; never gathers a
 *  sharded leaf. The leaves must be concrete (not traced, not donated). */
template <class T>
requires tree::is_tree_v<T>
void save(const std::filesystem::path& dir, const T& tree, const SaveOptions& opts = {}) {
  auto [leaves, s] = tree::flatten(tree);
  detail::save_leaves(dir, leaves, s.paths(), opts);
}

/** Restores the checkpoint at `dir` with `like`'s structure, statics and layouts: `like`
 *  is a tree laid out where the values should go (any mesh, any sharding, one device;
 *  abstract arrays from shape_dtype_struct or eval_shape work) with the saved paths,
 *  dtypes and shapes. Each device's block is read from the stored blocks that overlap
 *  it, CRC-checked. ValueError naming the leaf and file on any mismatch or corruption. */
template <class T>
requires tree::is_tree_v<T> T restore(const std::filesystem::path& dir, const T& like,
                                      const RestoreOptions& opts = {}) {
  auto [leaves, s] = tree::flatten(like);
  return tree::unflatten<T>(s, detail::restore_leaves(dir, leaves, s.paths(), opts));
}

/** The sidecar of the checkpoint at `dir` (reads no tensor data). */
Info inspect(const std::filesystem::path& dir);

/** root/step_00000123: where save_step puts step 123. */
std::filesystem::path step_dir(const std::filesystem::path& root, int64_t step);

/** Saves `tree` to step_dir(root, step), then deletes the complete step checkpoints
 *  beyond the `keep` newest by step number (0 keeps all; the one just saved always
 *  stays, even after a rewind to an older step). Returns the directory written. */
template <class T>
requires tree::is_tree_v<T> std::filesystem::path save_step(const std::filesystem::path& root,
                                                            int64_t step, const T& tree,
                                                            int keep = 0,
                                                            const SaveOptions& opts = {}) {
  std::filesystem::path dir = step_dir(root, step);
  if (keep < 0) detail::prune_steps(root, keep, step);  // raises the ValueError before writing
  save(dir, tree, opts);
  detail::prune_steps(root, keep, step);
  return dir;
}

/** The steps of the complete checkpoints under root, ascending ({} when root is absent). */
std::vector<int64_t> all_steps(const std::filesystem::path& root);

/** The newest complete step under root, or nullopt (absent root, no checkpoint). */
std::optional<int64_t> latest_step(const std::filesystem::path& root);

}  // namespace tsr::ckpt
