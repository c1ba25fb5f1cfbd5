// Terminal diagrams of shard layouts. Rank 1 draws one row of blocks, rank 2 a
// grid; higher ranks draw the sharded dimensions: a grid over the last two,
// one panel per block of the others. Inside a shard_map body it draws the
// per-device block: one cell per distinct block, by the manual axes it varies over.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "tsr/array.h"
#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/prims/collectives.h"
#include "tsr/sharding/body_mesh.h"
#include "tsr/sharding/format.h"

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

// Mesh coordinates of flat position i, row-major.
std::vector<int> coords_of(const std::vector<int>& sizes, int i) {
  std::vector<int> c(sizes.size());
  for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
    c[a] = i % sizes[a];
    i /= sizes[a];
  }
  return c;
}

// Mesh positions as coordinates: "(0,*)" is every device with x=0 (the holders of
// a block are always such a product); otherwise each position is listed.
std::string coords_label(const AbstractMesh& am, const std::vector<int>& pos) {
  const auto& sizes = am.axis_sizes();
  std::vector<std::set<int>> per(sizes.size());
  for (int p : pos) {
    std::vector<int> c = coords_of(sizes, p);
    for (size_t a = 0; a < c.size(); ++a) per[a].insert(c[a]);
  }
  size_t prod = 1;
  for (const auto& v : per) prod *= v.size();
  auto tuple = [](const std::vector<std::string>& parts) {
    std::string t = "(";
    for (size_t a = 0; a < parts.size(); ++a) t += (a ? "," : "") + parts[a];
    return t + ")";
  };
  std::vector<std::string> parts;
  if (prod == pos.size()) {
    for (size_t a = 0; a < per.size(); ++a) {
      std::string v;
      if (static_cast<int>(per[a].size()) == sizes[a] && sizes[a] > 1)
        v = "*";
      else
        for (int k : per[a]) v += (v.empty() ? "" : "|") + std::to_string(k);
      parts.push_back(v);
    }
    return tuple(parts);
  }
  std::string s;
  for (int p : pos) {
    parts.clear();
    for (int k : coords_of(sizes, p)) parts.push_back(std::to_string(k));
    s += (s.empty() ? "" : " ") + tuple(parts);
  }
  return s;
}

// Names the devices at some mesh positions: "CPU 0-3", or coordinates when only
// the abstract mesh is known.
std::string holders_label(const AbstractMesh& am, const std::optional<Mesh>& mesh,
                          const std::vector<int>& pos) {
  if (!mesh) return coords_label(am, pos);
  std::vector<int> ids;
  for (int p : pos) ids.push_back(mesh->devices()[p].id);
  return (mesh->devices()[0].platform == Platform::CPU ? "CPU " : "GPU ") + ranges(ids);
}

// The devices of a traced value's abstract mesh, when known: the shard_map body's
// mesh or the context mesh with the same axis names and sizes (types may differ).
std::optional<Mesh> devices_for(const AbstractMesh& am) {
  for (const Mesh& m : {detail::body_mesh(), get_mesh()})
    if (!m.empty() && m.axis_sizes() == am.axis_sizes() && m.axis_names() == am.axis_names())
      return m;
  return std::nullopt;
}

// "(x, y)": the order of the numbers in a coordinate cell.
std::string coords_legend(const AbstractMesh& am) {
  std::string s = "(";
  for (size_t a = 0; a < am.axis_names().size(); ++a) s += (a ? ", " : "") + am.axis_names()[a];
  return s + ")";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A shard_map body's value: its block type and, per distinct block, the devices
// holding it. Devices that differ only along axes outside the vma share a block; in
// a partial-manual body the block may itself be split over the other (Explicit) axes.
std::string visualize_block(const ArrayType& t, const AbstractMesh& am) {
  std::optional<Mesh> mesh = devices_for(am);
  const bool tracked = detail::current_check_vma();
  const auto& sizes = am.axis_sizes();
  std::vector<int> vary;  // mesh axes the blocks differ along, in mesh order
  std::vector<std::string> manual, same, split;
  std::vector<std::string> parts = t.sharding.spec().partition_axes();
  for (int a = 0; a < am.ndim(); ++a) {
    const std::string& n = am.axis_names()[a];
    bool is_manual = am.axis_types()[a] == AxisType::Manual;
    if (is_manual) manual.push_back(n);
    if (is_manual && (!tracked || t.vma.count(n)))
      vary.push_back(a);
    else if (std::find(parts.begin(), parts.end(), n) != parts.end())
      split.push_back(n);
    else
      same.push_back(n);
  }
  std::map<std::vector<int>, std::vector<int>> holders;  // key: coordinates along `vary`
  for (int i = 0; i < am.size(); ++i) {
    std::vector<int> c = coords_of(sizes, i), key;
    for (int a : vary) key.push_back(c[a]);
    holders[key].push_back(i);
  }
  size_t width = 0;
  for (const auto& [k, pos] : holders) width = std::max(width, holders_label(am, mesh, pos).size());
  width += 4;

  std::ostringstream os;
  os << t.str() << " block in a shard_map body on "
     << (mesh ? mesh->update({.axis_types = am.axis_types()}).str() : am.str()) << ", manual axes "
     << detail::names_tuple(manual) << "\n";
  if (!mesh)
    os << "devices not known (only the abstract mesh): a cell gives the mesh coordinates "
       << coords_legend(am) << " of the devices holding the block, * for every index\n";
  std::vector<std::string> roles;
  for (size_t k = 0; k < vary.size(); ++k) {
    size_t from_end = vary.size() - k;
    roles.push_back(am.axis_names()[vary[k]] + (from_end == 1   ? " (cols)"
                                                : from_end == 2 ? " (rows)"
                                                                : " (panels)"));
  }
  if (!tracked)
    os << "vma is not tracked (check_vma=false): any device may hold a different block; "
       << join(roles) << "\n";
  else if (vary.empty())
    os << "invariant: every device holds the same block"
       << (split.empty() ? "" : ", split over " + join(split) + " (its type's sharding)") << "\n";
  else
    os << "varies over " << join(roles) << ": "
       << (holders.size() == 1 ? "1 block" : std::to_string(holders.size()) + " different blocks")
       << (same.empty() ? ""
                        : "; devices that differ only along " + join(same) + " hold the same block")
       << (split.empty() ? ""
                         : "; each block is split over " + join(split) + " (its type's sharding)")
       << (same.empty() && split.empty() ? ", one per device" : "") << "\n";

  size_t nv = vary.size(), npanel = nv > 2 ? nv - 2 : 0;
  int64_t rows = nv >= 2 ? sizes[vary[nv - 2]] : 1, cols = nv >= 1 ? sizes[vary[nv - 1]] : 1;
  int64_t panels = 1;
  for (size_t k = 0; k < npanel; ++k) panels *= sizes[vary[k]];
  for (int64_t p = 0; p < panels; ++p) {
    std::vector<int> key(nv, 0);
    int64_t rest = p;
    for (int k = static_cast<int>(npanel) - 1; k >= 0; --k) {
      key[k] = static_cast<int>(rest % sizes[vary[k]]);
      rest /= sizes[vary[k]];
    }
    std::string title;
    for (size_t k = 0; k < npanel; ++k)
      title +=
          (title.empty() ? "" : ", ") + am.axis_names()[vary[k]] + "=" + std::to_string(key[k]);
    if (!title.empty()) os << title << "\n";
    std::vector<std::vector<std::string>> cells(rows, std::vector<std::string>(cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        if (nv >= 2) key[nv - 2] = static_cast<int>(r);
        if (nv >= 1) key[nv - 1] = static_cast<int>(c);
        cells[r][c] = holders_label(am, mesh, holders[key]);
      }
    draw_grid(os, cells, width);
  }
  Shape local = t.sharding.shard_shape(t.shape);
  os << "block shape " << shape_str(t.shape);
  if (!split.empty()) os << ", split over " << join(split) << " into " << shape_str(local);
  os << ", " << human_bytes(numel(local) * itemsize(t.dtype)) << " per device, " << am.size()
     << (am.size() == 1 ? " device" : " devices");
  if (!t.sharding.spec().unreduced().empty())
    os << "; each device holds a partial value (unreduced)";
  os << "\n";
  return os.str();
}

}  // namespace

std::string visualize(const Shape& shape, DType dtype, const NamedSharding& sharding) {
  check_dtype(dtype, "visualize");
  int rank = static_cast<int>(shape.size());
  sharding.check_rank(rank);
  NamedSharding s = sharding.normalized(rank);
  ArrayType t{shape, dtype, false, type_sharding(s, shape), {}, {}, {}};
  // Devices: the sharding's own; for a type (a traced value) the context mesh when it
  // has the same axes, else mesh coordinates (the jit call fixes the devices).
  std::optional<Mesh> mesh = s.concrete_mesh();
  if (!mesh && !s.mesh().empty()) mesh = devices_for(s.mesh());
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
  std::map<std::vector<int64_t>, std::vector<int>> holders;  // mesh positions
  for (int i = 0; i < n_dev; ++i) holders[s.chunk_of(i, rank)].push_back(i);
  size_t width = 0;
  for (const auto& [k, pos] : holders)
    width = std::max(width, holders_label(s.mesh(), mesh, pos).size());
  width += 4;

  if (mesh)
    os << t.str() << " on " << (mesh->ndim() ? mesh->str() : "device " + mesh->devices()[0].label())
       << "\n";
  else
    os << t.str() << " on " << s.mesh().str()
       << "\ndevices not known (only the abstract mesh): a cell gives the mesh coordinates "
       << coords_legend(s.mesh()) << " of the devices holding the block, * for every index\n";
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
        cells[r][c] = it == holders.end() ? "?" : holders_label(s.mesh(), mesh, it->second);
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
  // Inside a shard_map body (a traced value on a mesh with Manual axes): the block.
  const ArrayType& t = x.type();
  if (x.impl()->var) {
    AbstractMesh am = t.sharding.mesh().empty() ? get_abstract_mesh() : t.sharding.mesh();
    if (!am.manual_axes().empty()) return visualize_block(t, am);
  }
  // A traced array's sharding is its type's (abstract mesh, no devices).
  return visualize(x.shape(), x.dtype(), x.sharding());
}

}  // namespace tsr
