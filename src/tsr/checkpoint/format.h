#pragma once
// What save and restore share: the file names, safetensors dtype names, the sidecar's
// JSON schema (both directions), and small POSIX file helpers. Only public tsr headers
// are used here (docs/design/0017: the training stack is built on the public API).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tsr/checkpoint.h"

namespace tsr::ckpt::detail {

/** The tensor file inside a checkpoint directory. */
inline constexpr const char* kTensorsFile = "tensors.safetensors";
/** The sidecar inside a checkpoint directory; its presence makes a checkpoint. */
inline constexpr const char* kSidecarFile = "checkpoint.json";
/** The sidecar's "format" and the safetensors `__metadata__` "format" value. */
inline constexpr const char* kFormatName = "tessera-checkpoint";

/** The safetensors dtype name: "F32", "BF16", "BOOL", ... */
const char* safetensors_dtype(DType t);
/** The DType of a safetensors dtype name, or nullopt. */
std::optional<DType> dtype_from_safetensors(const std::string& name);

/** The sidecar text of `info`: JSON with one line per leaf and per block. */
std::string sidecar_text(const Info& info);
/** Reads, parses and validates dir/checkpoint.json: ValueError naming the file when it
 *  or the directory is missing, the JSON is malformed, a field has the wrong type, or
 *  the format version is unknown. `api` tags the messages. */
Info read_sidecar(const std::filesystem::path& dir, const char* api);

/** The CRC-32 of zlib and gzip over n bytes, continuing from `crc` (0 to start). */
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

/** The text of errno (strerror). */
std::string errno_text(int err);
/** An owned file descriptor. */
class Fd {
 public:
  /** Takes ownership of fd (-1: none). */
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  /** Takes o's descriptor. */
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  /** Closes ours, takes o's. */
  Fd& operator=(Fd&& o) noexcept;
  /** The descriptor. */
  int get() const { return fd_; }
  /** Closes it now, reporting a failed close (a lost write) as RuntimeError naming `file`. */
  void close(const std::filesystem::path& file, const char* api);

 private:
  int fd_;
};
/** Writes all of [data, data + n) at `offset`; RuntimeError naming the file on failure. */
void write_at(int fd, const void* data, size_t n, int64_t offset, const std::filesystem::path& file,
              const char* api);
/** fsync of an open file or of a directory by path; RuntimeError on failure. */
void sync_fd(int fd, const std::filesystem::path& file, const char* api);
/** fsync of a directory (its entries: renames and creations become durable). */
void sync_dir(const std::filesystem::path& dir, const char* api);

/** Runs f(0..n-1) on up to min(n, cores, 8) threads, the caller's included; the first
 *  exception thrown is rethrown once all have stopped (the rest are skipped). */
void parallel_for(size_t n, const std::function<void(size_t)>& f);

}  // namespace tsr::ckpt::detail
