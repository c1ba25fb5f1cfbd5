// inspect and the printable sidecar, and the step helpers of a training loop
// (root/step_00000123 directories, the newest one, pruning older ones).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "tsr/checkpoint/format.h"
#include "tsr/distributed.h"
#include "tsr/error.h"

namespace tsr::ckpt {

namespace fs = std::filesystem;

std::string MeshInfo::str() const {
  if (axis_names.empty()) return "(1 device)";
  std::string out = "(";
  for (size_t i = 0; i < axis_names.size(); ++i)
    out += (i ? ", '" : "'") + axis_names[i] + "': " + std::to_string(axis_sizes[i]);
  return out + ")";
}

int64_t LeafInfo::nbytes() const { return numel(shape) * itemsize(dtype); }

int64_t Info::stored_bytes() const {
  int64_t n = 0;
  for (const auto& l : leaves)
    for (const auto& b : l.blocks) n += b.nbytes;
  return n;
}

std::string Info::str() const {
  std::ostringstream os;
  os << "checkpoint (format " << format_version << ") on mesh " << mesh.str() << ": "
     << leaves.size() << " leaves, " << stored_bytes() << " bytes stored\n";
  size_t w = 4;
  for (const auto& l : leaves) w = std::max(w, l.path.size());
  for (const auto& l : leaves) {
    std::string type = std::string(dtype_short_name(l.dtype)) + shape_str(l.shape);
    os << "  " << l.path << std::string(w - l.path.size() + 2, ' ') << type
       << std::string(type.size() < 20 ? 20 - type.size() : 1, ' ') << l.spec.repr() << "  "
       << l.blocks.size() << (l.blocks.size() == 1 ? " block" : " blocks");
    if (!(l.mesh == mesh)) os << " on " << l.mesh.str();
    os << '\n';
  }
  return os.str();
}

Info inspect(const fs::path& dir) { return detail::read_sidecar(dir, "ckpt.inspect"); }

fs::path step_dir(const fs::path& root, int64_t step) {
  if (step < 0)
    throw ValueError("[ckpt.step_dir] the step is negative. Got " + std::to_string(step) +
                     "; expected a step >= 0.");
  char name[40];
  std::snprintf(name, sizeof(name), "step_%08lld", static_cast<long long>(step));
  return root / name;
}

std::vector<int64_t> all_steps(const fs::path& root) {
  std::vector<int64_t> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() < 6 || name.size() > 23 || name.compare(0, 5, "step_") != 0) continue;
    if (!std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    // Only complete checkpoints count: the sidecar is written last.
    if (!fs::exists(it->path() / detail::kSidecarFile, ec)) continue;
    out.push_back(std::stoll(name.substr(5)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<int64_t> latest_step(const fs::path& root) {
  std::vector<int64_t> s = all_steps(root);
  if (s.empty()) return std::nullopt;
  return s.back();
}

namespace detail {

void prune_steps(const fs::path& root, int keep, int64_t saved) {
  if (keep < 0)
    throw ValueError("[ckpt.save_step] keep is negative. Got " + std::to_string(keep) +
                     "; expected the number of step checkpoints to keep (0 keeps all).");
  if (keep == 0) return;
  if (process_index() != 0) return;  // with many processes, process 0 deletes
  std::vector<int64_t> steps = all_steps(root);
  size_t drop = steps.size() > static_cast<size_t>(keep) ? steps.size() - keep : 0;
  for (size_t i = 0; i < drop; ++i) {
    if (steps[i] == saved) continue;
    fs::path dir = step_dir(root, steps[i]);
    std::error_code ec;
    // The sidecar goes first, so a half-deleted directory is no longer a checkpoint.
    fs::remove(dir / kSidecarFile, ec);
    if (!ec) fs::remove_all(dir, ec);
    if (ec)
      throw RuntimeError("[ckpt.save_step] deleting the old checkpoint " + dir.string() +
                         " failed: " + ec.message() +
                         ". Got a file-system error; expected it removed. Check permissions.");
  }
}

}  // namespace detail
}  // namespace tsr::ckpt
