// Terminal diagrams of shard layouts. Rank 1 draws one row of blocks, rank 2 a
// grid; higher ranks draw the sharded dimensions: a grid over the last two,
// one panel per block of the others.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "tsr/array.h"
#include "tsr/error.h"

namespace tsr {
namespace {

std::string ranges(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ids[i]);
    if (j > i + 1)
      s += "-" + std::to_string(ids[j]);
    else if (j == i + 1)
      s += "," + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::string human_bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  std::ostringstream os;
  if (u == 0)
    os << b << " B";
  else
    os << (v < 10 ? std::round(v * 10) / 10 : std::round(v)) << " " << units[u];
  return os.str();
}

std::string repeat(const std::string& s, size_t n) {
  std::string r;
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}

// Draws a rows x cols grid of labels, every cell `width` columns wide.
void draw_grid(std::ostringstream& os, const std::vector<std::vector<std::string>>& cells,
               size_t width) {
  size_t rows = cells.size(), cols = cells[0].size();
  auto rule = [&](const char* l, const char* m, const char* r) {
    os << l;
    for (size_t c = 0; c < cols; ++c) os << repeat("─", width) << (c + 1 < cols ? m : r);
    os << "\n";
  };
  rule("┌", "┬", "┐");
  for (size_t r = 0; r < rows; ++r) {
    os << "│";
    for (size_t c = 0; c < cols; ++c) {
      const std::string& t = cells[r][c];
      size_t left = (width - t.size()) / 2;
      os << std::string(left, ' ') << t << std::string(width - t.size() - left, ' ') << "│";
    }
    os << "\n";
    if (r + 1 < rows) rule("├", "┼", "┤");
  }
  rule("└", "┴", "┘");
}

}  // namespace

std::string visualize(const Shape& shape, DType dtype, const NamedSharding& sharding) {
  int rank = static_cast<int>(shape.size());
  sharding.check_rank(rank);
  NamedSharding s = sharding.normalized(rank);
  ArrayType t{shape, dtype, false, type_sharding(s, shape), {}};
  // Devices: the sharding's own; for a type (a traced value) the context mesh when it
  // is that mesh, else mesh positions (the jit call fixes the devices).
  std::optional<Mesh> mesh = s.concrete_mesh();
  if (!mesh) {
    Mesh ctx = get_mesh();
    if (!ctx.empty() && ctx.abstract_mesh() == s.mesh()) mesh = ctx;
  }
  std::ostringstream os;
  if (!mesh && s.mesh().empty()) {
    os << t.str() << " (traced, no mesh in its type): every device the call runs on holds the "
       << "whole value\nshard shape " << shape_str(shape) << ", "
       << human_bytes(numel(shape) * itemsize(dtype)) << " per device\n";
    return os.str();
  }
  auto tiles = s.tiling(rank);
  std::vector<int> sharded;
  for (int d = 0; d < rank; ++d)
    if (tiles[d] > 1) sharded.push_back(d);

  // Grid dims: rows and cols (-1: none); the remaining sharded dims make panels.
  int row_dim = -1, col_dim = -1;
  std::vector<int> panel_dims;
  if (rank == 1) {
    col_dim = 0;
  } else if (rank == 2) {
    row_dim = 0;
    col_dim = 1;
  } else if (!sharded.empty()) {
    col_dim = sharded.back();
    if (sharded.size() >= 2) row_dim = sharded[sharded.size() - 2];
    panel_dims.assign(sharded.begin(), sharded.end() - std::min<size_t>(2, sharded.size()));
  }

  // Devices holding each block, keyed by the chunk vector.
  int n_dev = mesh ? mesh->size() : s.mesh().size();
  std::map<std::vector<int64_t>, std::vector<int>> holders;
  for (int i = 0; i < n_dev; ++i)
    holders[s.chunk_of(i, rank)].push_back(mesh ? mesh->devices()[i].id : i);
  const char* prefix = !mesh ? "#" : mesh->devices()[0].platform == Platform::CPU ? "CPU " : "GPU ";
  size_t width = 0;
  for (const auto& [k, ids] : holders)
    width = std::max(width, std::string(prefix).size() + ranges(ids).size());
  width += 4;

  if (mesh)
    os << t.str() << " on " << (mesh->ndim() ? mesh->str() : "device " + mesh->devices()[0].label())
       << "\n";
  else
    os << t.str() << " on " << s.mesh().str()
       << " (traced: #i is mesh position i; the jit call fixes the devices)\n";
  auto dim_label = [&](int d) {
    return "dim " + std::to_string(d) + " (" + std::to_string(shape[d]) + " in " +
           std::to_string(tiles[d]) + (tiles[d] == 1 ? " block)" : " blocks)");
  };
  if (rank >= 3) {
    if (sharded.empty()) os << "no dimension is sharded\n";
    if (row_dim >= 0) os << "rows: " << dim_label(row_dim) << "\n";
    if (col_dim >= 0) os << "cols: " << dim_label(col_dim) << "\n";
  }
  int64_t rows = row_dim >= 0 ? tiles[row_dim] : 1, cols = col_dim >= 0 ? tiles[col_dim] : 1;
  int64_t panels = 1;
  for (int d : panel_dims) panels *= tiles[d];
  for (int64_t p = 0; p < panels; ++p) {
    std::vector<int64_t> chunk(rank, 0);
    int64_t rest = p;
    std::string title;
    for (int k = static_cast<int>(panel_dims.size()) - 1; k >= 0; --k) {
      chunk[panel_dims[k]] = rest % tiles[panel_dims[k]];
      rest /= tiles[panel_dims[k]];
    }
    for (int d : panel_dims)
      title += (title.empty() ? "" : ", ") + dim_label(d) + ": block " + std::to_string(chunk[d]);
    if (!title.empty()) os << title << "\n";
    std::vector<std::vector<std::string>> cells(rows, std::vector<std::string>(cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        if (row_dim >= 0) chunk[row_dim] = r;
        if (col_dim >= 0) chunk[col_dim] = c;
        auto it = holders.find(chunk);
        cells[r][c] = it == holders.end() ? "?" : prefix + ranges(it->second);
      }
    draw_grid(os, cells, width);
  }
  Shape local = s.shard_shape(shape);
  int64_t bytes = numel(local) * itemsize(dtype);
  os << "shard shape " << shape_str(local) << ", " << human_bytes(bytes) << " per device, " << n_dev
     << (n_dev == 1 ? " device" : " devices");
  if (!s.spec().unreduced().empty()) os << "; each device holds a partial value (unreduced)";
  os << "\n";
  return os.str();
}

std::string visualize(const Array& x) {
  if (!x.valid())
    throw ValueError(
        "[visualize] the handle is empty. Got a default-constructed Array; expected an array "
        "made by an op.");
  // A traced array's sharding is its type's (abstract mesh, no devices).
  return visualize(x.shape(), x.dtype(), x.sharding());
}

}  // namespace tsr
