#pragma once
// A minimal single-file safetensors writer for `tsr-train --dump-reference`: the
// training reference check (tests/reference/train) reads the file with numpy.
// Checkpoints use tsr/checkpoint.h; this file only has to be simple and exact.
#include <cstdint>
#include <string>
#include <vector>

namespace train {

/** One named host tensor. */
struct HostTensor {
  std::string name;           /**< tensor name in the file */
  std::string dtype;          /**< safetensors dtype: "F32" or "I32" */
  std::vector<int64_t> shape; /**< dimensions */
  std::vector<char> bytes;    /**< row-major little-endian data */
};

/** Writes `tensors` and string `metadata` (key, value pairs) to `path`; throws
 *  std::runtime_error naming the file when it cannot be written. */
void write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace train
