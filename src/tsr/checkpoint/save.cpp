// ckpt::save: each leaf's distinct device blocks into one safetensors file plus the
// sidecar, written into a temporary sibling directory and renamed into place.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <utility>

#include "tsr/checkpoint/format.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/multihost.h"
#include "tsr/ops.h"

namespace tsr::ckpt::detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
constexpr const char* kApi = "ckpt.save";

// One tensor of the file: which leaf and block it is, the device array holding it, and
// where its bytes go in the data section.
struct Pending {
  size_t leaf = 0;
  size_t block = 0;
  Array data;
  int64_t offset = 0;
};

// The tensor file of process k in a save by many processes.
std::string process_file(int k) { return "tensors-p" + std::to_string(k) + ".safetensors"; }

MeshInfo mesh_info(const Mesh& m) {
  MeshInfo out{m.axis_names(), m.axis_sizes(), m.axis_types(), {}};
  for (const auto& d : m.devices()) out.device_ids.push_back(d.id);
  return out;
}

// The leaf as it is stored: its logical value, so partial sums are reduced first (on the
// devices; the layout keeps its partitioned dimensions).
Array logical(const Array& x) {
  const PartitionSpec& spec = x.sharding().spec();
  if (spec.unreduced().empty()) return x;
  const PartitionSpec& ts = x.type().sharding.spec();
  return reshard(x, x.sharding().with_spec(ts.with_sets({}, ts.reduced())));
}

// The distinct blocks of leaf `i` (the first device holding each index box), appended
// to `out` at increasing offsets.
LeafInfo plan_leaf(const Array& x0, const std::string& path, size_t i, int64_t& offset,
                   std::vector<Pending>& out) {
  if (!x0.valid())
    throw ValueError("[" + std::string(kApi) + "] leaf '" + path +
                     "' is an empty Array. Got a default-constructed Array; expected a concrete "
                     "array. Initialise every leaf before saving.");
  Array x;
  std::vector<Shard> shards;
  try {
    x = logical(x0);
    shards = x.addressable_shards();
  } catch (const Error& e) {
    throw ValueError("[" + std::string(kApi) + "] leaf '" + path +
                     "' cannot be saved: " + e.what());
  }
  LeafInfo leaf;
  leaf.path = path;
  leaf.dtype = x.dtype();
  leaf.shape = x.shape();
  NamedSharding s = x.sharding().normalized(x.ndim());
  leaf.spec = s.spec();
  const Mesh& mesh = *s.concrete_mesh();
  leaf.mesh = mesh_info(mesh);
  // Every distinct block, written by the process of the first device (in mesh order)
  // that holds it: each process knows the whole list, and writes only its own blocks.
  const bool many = process_count() > 1;
  std::set<std::vector<int64_t>> seen;
  for (int k = 0; k < mesh.size(); ++k) {
    BlockInfo b;
    int64_t n = 1;
    for (const auto& sl : s.index_of(k, x.shape())) {
      b.start.push_back(sl.start);
      b.stop.push_back(sl.stop);
      n *= sl.stop - sl.start;
    }
    std::vector<int64_t> key = b.start;
    key.insert(key.end(), b.stop.begin(), b.stop.end());
    if (!seen.insert(key).second) continue;  // a replica of a block already planned
    b.nbytes = n * itemsize(x.dtype());
    const Device& owner = mesh.devices()[static_cast<size_t>(k)];
    if (many) b.file = process_file(owner.process_index());
    if (owner.process_index() == process_index()) {
      auto it = std::find_if(shards.begin(), shards.end(),
                             [&](const Shard& sh) { return sh.device == owner; });
      out.push_back({i, leaf.blocks.size(), *it->data, offset});
      offset += b.nbytes;
    }
    leaf.blocks.push_back(std::move(b));
  }
  return leaf;
}

// Tensor names: the path, plus "#k" when the leaf has several blocks; made unique when
// two paths would collide ("a#1" the key vs block 1 of "a").
void name_tensors(Info& info) {
  std::set<std::string> used;
  for (size_t i = 0; i < info.leaves.size(); ++i) {
    auto& l = info.leaves[i];
    std::string base = l.path.empty() ? std::string("<root>") : l.path;
    for (size_t k = 0; k < l.blocks.size(); ++k) {
      std::string name = l.blocks.size() == 1 ? base : base + "#" + std::to_string(k);
      if (used.count(name)) name += "~" + std::to_string(i);
      used.insert(name);
      l.blocks[k].tensor = name;
    }
  }
}

// The safetensors header: the length (8 bytes, little-endian) and the JSON, padded with
// spaces so that the data section starts 8-byte aligned (as the reference writer does).
std::string safetensors_header(const Info& info, const std::vector<Pending>& blocks) {
  ordered_json h = ordered_json::object();
  h["__metadata__"] = {{"format", kFormatName},
                       {"format_version", std::to_string(info.format_version)}};
  for (const auto& p : blocks) {
    const LeafInfo& l = info.leaves[p.leaf];
    const BlockInfo& b = l.blocks[p.block];
    std::vector<int64_t> shape;
    for (size_t d = 0; d < b.start.size(); ++d) shape.push_back(b.stop[d] - b.start[d]);
    h[b.tensor] = {{"dtype", safetensors_dtype(l.dtype)},
                   {"shape", shape},
                   {"data_offsets", {p.offset, p.offset + b.nbytes}}};
  }
  std::string json = h.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int k = 0; k < 8; ++k)
    out[static_cast<size_t>(k)] = static_cast<char>((n >> (8 * k)) & 0xff);
  return out + json;
}

// A block's bytes on the host (one copy of that device's buffer).
template <typename F>
void with_bytes(const Array& a, F&& f) {
  if (is_complex(a.dtype())) {
    dispatch_complex(a.dtype(), [&](auto tag) {
      std::vector<decltype(tag)> v = a.to_vector<decltype(tag)>();
      f(static_cast<const void*>(v.data()), v.size() * sizeof(tag));
    });
    return;
  }
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using H = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;  // bool as bytes
    std::vector<H> v = a.to_vector<H>();
    f(static_cast<const void*>(v.data()), v.size() * sizeof(H));
  });
}

Fd create_file(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    throw RuntimeError("[" + std::string(kApi) + "] cannot create " + file.string() + ": " +
                       errno_text(errno) +
                       ". Got an I/O error; expected a writable directory. "
                       "Check the path and permissions.");
  return fd;
}

void write_file(const fs::path& file, const std::string& text) {
  Fd fd = create_file(file);
  write_at(fd.get(), text.data(), text.size(), 0, file, kApi);
  sync_fd(fd.get(), file, kApi);
  fd.close(file, kApi);
}

// A fresh sibling name: DIR.tmp-<pid>-<n> or DIR.old-<pid>-<n>.
fs::path sibling(const fs::path& dir, const char* kind) {
  static std::atomic<uint64_t> counter{0};
  for (;;) {
    fs::path p = dir.parent_path() /
                 (dir.filename().string() + "." + kind + "-" + std::to_string(::getpid()) + "-" +
                  std::to_string(counter.fetch_add(1)));
    std::error_code ec;
    if (!fs::exists(p, ec)) return p;
  }
}

[[noreturn]] void fs_error(const std::string& what, const std::error_code& ec) {
  throw RuntimeError("[" + std::string(kApi) + "] " + what + " failed: " + ec.message() +
                     ". Got a file-system error; expected the checkpoint written. Check the "
                     "path, permissions and free space.");
}

// Checks where the checkpoint goes; returns the normalised directory.
fs::path check_target(const fs::path& dir0, const SaveOptions& opts) {
  if (dir0.empty())
    throw ValueError("[" + std::string(kApi) +
                     "] the directory is empty. Got \"\"; expected a "
                     "path such as \"ckpt/step_1\".");
  fs::path dir = fs::absolute(dir0).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return dir;
  if (!fs::is_directory(dir, ec))
    throw ValueError("[" + std::string(kApi) + "] " + dir.string() +
                     " exists and is not a directory. Got a file; expected a new path or an "
                     "older checkpoint to replace. Choose another path.");
  if (!opts.overwrite)
    throw ValueError("[" + std::string(kApi) + "] a checkpoint already exists at " + dir.string() +
                     ". Got SaveOptions{.overwrite = false}; expected a new "
                     "path. Choose another path, or set overwrite = true to replace it.");
  if (!fs::exists(dir / kSidecarFile, ec) && !fs::is_empty(dir, ec))
    throw ValueError("[" + std::string(kApi) + "] " + dir.string() +
                     " is a directory that is not a checkpoint (no " + kSidecarFile +
                     "), and saving would replace it. Got a non-empty directory; expected a "
                     "new path or an older checkpoint. Choose another path.");
  return dir;
}

// Moves the finished temporary directory to `dir`, replacing an older checkpoint:
// rename the old one away, the new one in, then delete the old one.
void publish(const fs::path& tmp, const fs::path& dir) {
  std::error_code ec;
  fs::path parent = dir.parent_path();
  if (!fs::exists(dir, ec)) {
    fs::rename(tmp, dir, ec);
    if (ec) fs_error("renaming " + tmp.string() + " to " + dir.string(), ec);
    sync_dir(parent, kApi);
    return;
  }
  fs::path old = sibling(dir, "old");
  fs::rename(dir, old, ec);
  if (ec) fs_error("moving the older checkpoint " + dir.string() + " aside", ec);
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::error_code ec2;
    fs::rename(old, dir, ec2);  // put the older checkpoint back
    fs_error("renaming " + tmp.string() + " to " + dir.string(), ec);
  }
  sync_dir(parent, kApi);
  fs::remove_all(old, ec);
  if (ec) fs_error("removing the older checkpoint " + old.string(), ec);
}

// Every block's checksum on every process: each process knows those of the blocks it
// wrote (the others are 0), so the largest over processes is the checksum.
void share_checksums(Info& info) {
  std::vector<int64_t> crcs;
  for (const auto& l : info.leaves)
    for (const auto& b : l.blocks) crcs.push_back(b.crc32);
  if (crcs.empty()) return;
  // On this process's device: a context mesh would make it a global array.
  Array mine = array<int64_t>(crcs, {static_cast<int64_t>(crcs.size())}, local_devices()[0]);
  Array all = multihost::process_allgather(mine);
  std::vector<int64_t> got = max(all, 0).to_vector<int64_t>();
  size_t k = 0;
  for (auto& l : info.leaves)
    for (auto& b : l.blocks) b.crc32 = static_cast<uint32_t>(got[k++]);
}

}  // namespace

void save_leaves(const fs::path& dir0, const std::vector<Array>& leaves,
                 const std::vector<std::string>& paths, const SaveOptions& opts) {
  fs::path dir = check_target(dir0, opts);
  Info info;
  std::vector<Pending> blocks;
  int64_t data_bytes = 0;
  size_t widest = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    info.leaves.push_back(plan_leaf(leaves[i], paths[i], i, data_bytes, blocks));
    if (info.leaves[i].mesh.device_ids.size() > info.leaves[widest].mesh.device_ids.size())
      widest = i;
  }
  if (!info.leaves.empty()) info.mesh = info.leaves[widest].mesh;
  name_tensors(info);
  std::string header = safetensors_header(info, blocks);

  // Many processes write into one temporary directory (a shared file system): process
  // 0 makes it, each writes its blocks' file, then process 0 writes the sidecar with
  // every block's checksum and publishes it. Barriers between the phases.
  const bool many = process_count() > 1;
  const bool lead = process_index() == 0;
  std::error_code ec;
  fs::path tmp =
      many ? dir.parent_path() / (dir.filename().string() + ".tmp-many") : sibling(dir, "tmp");
  if (lead || !many) {
    fs::create_directories(dir.parent_path(), ec);
    if (ec) fs_error("creating " + dir.parent_path().string(), ec);
    if (many) fs::remove_all(tmp, ec);  // a crashed earlier save's leftovers
    fs::create_directory(tmp, ec);
    if (ec) fs_error("creating " + tmp.string(), ec);
  }
  if (many) multihost::sync_global_devices("checkpoint save: " + dir.string());
  try {
    fs::path file = tmp / (many ? process_file(process_index()) : kTensorsFile);
    Fd fd = create_file(file);
    write_at(fd.get(), header.data(), header.size(), 0, file, kApi);
    const int64_t base = static_cast<int64_t>(header.size());
    // Blocks in parallel: each is copied off its device, checksummed and written at its
    // own offset, so copies, CRCs and writes of different blocks overlap.
    parallel_for(blocks.size(), [&](size_t k) {
      const Pending& p = blocks[k];
      with_bytes(p.data, [&](const void* bytes, size_t n) {
        info.leaves[p.leaf].blocks[p.block].crc32 = crc32(bytes, n);
        write_at(fd.get(), bytes, n, base + p.offset, file, kApi);
        // Start writing this block back now, so that the disk works while the other
        // blocks are copied and checksummed (the fsync below then waits for less).
        ::sync_file_range(fd.get(), base + p.offset, static_cast<off_t>(n), SYNC_FILE_RANGE_WRITE);
      });
    });
    sync_fd(fd.get(), file, kApi);
    fd.close(file, kApi);
    if (many) share_checksums(info);
    if (lead || !many) {
      write_file(tmp / kSidecarFile, sidecar_text(info));  // last: marks complete
      sync_dir(tmp, kApi);
      publish(tmp, dir);
    }
  } catch (...) {
    if (!many) fs::remove_all(tmp, ec);
    throw;
  }
  if (many) multihost::sync_global_devices("checkpoint saved: " + dir.string());
}

}  // namespace tsr::ckpt::detail
