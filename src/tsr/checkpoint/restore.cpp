// ckpt::restore: checks `like` against the sidecar, validates the safetensors header
// against it, then builds each target device's block from the stored blocks that
// overlap it, read through a read-only mapping (only the pages of those blocks are
// touched) and CRC-checked once each.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "tsr/checkpoint/format.h"
#include "tsr/distributed.h"
#include "tsr/error.h"

namespace tsr::ckpt::detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr const char* kApi = "ckpt.restore";
constexpr uint64_t kMaxHeader = 100'000'000;

// One tensor of the safetensors header.
struct Tensor {
  DType dtype;
  Shape shape;
  int64_t begin = 0, end = 0;  // in the data section
};

// The tensor file, validated and mapped read-only.
class TensorFile {
 public:
  TensorFile(const fs::path& file) : file_(file) {
    fd_ = Fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd_.get() < 0)
      fail("cannot be opened (" + errno_text(errno) + ")",
           "the checkpoint is incomplete or unreadable; restore another one");
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) fail("cannot be read (" + errno_text(errno) + ")", "");
    size_ = static_cast<int64_t>(st.st_size);
    if (size_ < 8)
      truncated("is " + std::to_string(size_) + " bytes, shorter than the 8-byte header length");
    unsigned char len[8];
    read_exact(len, 8, 0);
    uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | len[k];
    if (n > kMaxHeader)  // safetensors' own limit; also bounds what a bad length allocates
      fail("announces a " + std::to_string(n) + "-byte header, past the 100 MB limit", "");
    if (n > static_cast<uint64_t>(size_ - 8))
      truncated("announces a " + std::to_string(n) + "-byte header but holds " +
                std::to_string(size_ - 8) + " bytes after the length");
    std::string text(static_cast<size_t>(n), '\0');
    read_exact(text.data(), text.size(), 8);
    data_start_ = 8 + static_cast<int64_t>(n);
    parse_header(text);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd_.get(), 0);
      if (p == MAP_FAILED) fail("cannot be mapped (" + errno_text(errno) + ")", "");
      map_ = p;
    }
  }
  ~TensorFile() {
    if (map_) ::munmap(map_, static_cast<size_t>(size_));
  }
  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  const fs::path& path() const { return file_; }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  /** The mapped bytes of a tensor. */
  const unsigned char* bytes(const Tensor& t) const {
    return static_cast<const unsigned char*>(map_) + data_start_ + t.begin;
  }
  /** Asks the kernel to start reading a tensor's pages now (restore reads only the
   *  tensors it needs; this overlaps their disk reads with the CRCs and copies). */
  void prefetch(const Tensor& t) const {
    if (!map_ || t.end == t.begin) return;
    const long page = ::sysconf(_SC_PAGESIZE);
    int64_t from = (data_start_ + t.begin) / page * page;
    ::madvise(static_cast<char*>(map_) + from, static_cast<size_t>(data_start_ + t.end - from),
              MADV_WILLNEED);
  }

  [[noreturn]] void fail(const std::string& what, const std::string& fix) const {
    throw ValueError("[" + std::string(kApi) + "] the tensor file " + file_.string() + " " + what +
                     ". Got a damaged or foreign file; expected the one tsr::ckpt::save wrote " +
                     "with this sidecar. " +
                     (fix.empty() ? "Restore another checkpoint." : fix + "."));
  }

 private:
  [[noreturn]] void truncated(const std::string& what) const {
    fail(what + ": it is truncated",
         "The save did not finish or the file was cut; restore another checkpoint");
  }
  void read_exact(void* dst, size_t n, int64_t offset) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_.get(), p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) truncated("ends early at byte " + std::to_string(offset));
      p += r;
      n -= static_cast<size_t>(r);
      offset += r;
    }
  }
  void parse_header(const std::string& text) {
    json h;
    try {
      h = json::parse(text);
    } catch (const json::exception& e) {
      fail(std::string("has a header that is not valid JSON (") + e.what() + ")", "");
    }
    if (!h.is_object()) fail("has a header that is not a JSON object", "");
    const json want_meta = {{"format", kFormatName},
                            {"format_version", std::to_string(kFormatVersion)}};
    auto meta = h.find("__metadata__");
    if (meta == h.end() || *meta != want_meta)
      fail("has a __metadata__ other than " + want_meta.dump(), "");
    int64_t data_len = size_ - data_start_;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      const json& v = it.value();
      std::string where = "has a malformed entry for tensor '" + it.key() + "'";
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
          !v.contains("data_offsets") || !v["dtype"].is_string() || !v["shape"].is_array() ||
          !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
        fail(where, "");
      Tensor t;
      auto dt = dtype_from_safetensors(v["dtype"].get<std::string>());
      if (!dt) fail(where + " (unknown dtype " + v["dtype"].dump() + ")", "");
      t.dtype = *dt;
      for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) fail(where, "");
        t.shape.push_back(d.get<int64_t>());
      }
      for (int k = 0; k < 2; ++k)
        if (!v["data_offsets"][k].is_number_unsigned() ||
            v["data_offsets"][k].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          fail(where, "");
      t.begin = v["data_offsets"][0].get<int64_t>();
      t.end = v["data_offsets"][1].get<int64_t>();
      if (t.begin > t.end) fail(where + " (data_offsets decrease)", "");
      if (t.end > data_len)
        truncated("ends at byte " + std::to_string(data_start_ + data_len) + " but tensor '" +
                  it.key() + "' needs bytes up to " + std::to_string(data_start_ + t.end));
      ranges.emplace_back(t.begin, t.end);
      tensors_.emplace(it.key(), std::move(t));
    }
    // The data section holds exactly the tensors, back to back (as safetensors requires).
    std::sort(ranges.begin(), ranges.end());
    int64_t at = 0;
    for (const auto& [b, e] : ranges) {
      if (b != at) fail("has tensors that overlap or leave gaps in the data section", "");
      at = e;
    }
    if (at != data_len)
      fail("has " + std::to_string(data_len - at) + " bytes after its last tensor", "");
  }

  fs::path file_;
  Fd fd_;
  int64_t size_ = 0;
  int64_t data_start_ = 0;
  void* map_ = nullptr;
  std::map<std::string, Tensor> tensors_;
};

std::string type_str(DType t, const Shape& s) {
  std::string out = std::string(dtype_short_name(t)) + "[";
  for (size_t d = 0; d < s.size(); ++d) out += (d ? "," : "") + std::to_string(s[d]);
  return out + "]";
}

// Every sidecar block names a tensor of the file with its dtype, shape and length, and
// every tensor of the file is some block: the two files belong together.
void cross_check(const Info& info, const std::string& name, const TensorFile& tf) {
  size_t used = 0;
  for (const auto& l : info.leaves) {
    for (const auto& b : l.blocks) {
      if (b.file != name) continue;  // in another process's file
      auto it = tf.tensors().find(b.tensor);
      if (it == tf.tensors().end())
        tf.fail("lacks tensor '" + b.tensor + "' of leaf '" + l.path + "'", "");
      Shape shape;
      for (size_t d = 0; d < b.start.size(); ++d) shape.push_back(b.stop[d] - b.start[d]);
      const Tensor& t = it->second;
      if (t.dtype != l.dtype || t.shape != shape || t.end - t.begin != b.nbytes)
        tf.fail("holds tensor '" + b.tensor + "' of leaf '" + l.path + "' as " +
                    type_str(t.dtype, t.shape) + " (" + std::to_string(t.end - t.begin) +
                    " bytes) where the sidecar says " + type_str(l.dtype, shape) + " (" +
                    std::to_string(b.nbytes) + " bytes)",
                "");
      ++used;
    }
  }
  if (used != tf.tensors().size())
    tf.fail("holds " + std::to_string(tf.tensors().size() - used) +
                " tensors the sidecar does not list",
            "");
}

// `like` against the sidecar: one ValueError listing every missing, extra or mismatched
// leaf. Returns, per like leaf, the index of its stored leaf.
std::vector<size_t> match_leaves(const Info& info, const std::vector<Array>& like,
                                 const std::vector<std::string>& paths, const fs::path& dir,
                                 const RestoreOptions& opts) {
  std::map<std::string, size_t> stored;
  for (size_t i = 0; i < info.leaves.size(); ++i) stored.emplace(info.leaves[i].path, i);
  std::vector<size_t> out(like.size());
  std::vector<std::string> problems;
  std::vector<bool> matched(info.leaves.size(), false);
  for (size_t i = 0; i < like.size(); ++i) {
    auto it = stored.find(paths[i]);
    if (!like[i].valid()) {
      problems.push_back("leaf '" + paths[i] + "' of like is an empty Array");
      continue;
    }
    std::string want = type_str(like[i].dtype(), like[i].shape());
    if (it == stored.end()) {
      problems.push_back("leaf '" + paths[i] + "' (" + want + ") is not in the checkpoint");
      continue;
    }
    const LeafInfo& l = info.leaves[it->second];
    matched[it->second] = true;
    out[i] = it->second;
    if (l.dtype != like[i].dtype() || l.shape != like[i].shape())
      problems.push_back("leaf '" + paths[i] + "' is " + type_str(l.dtype, l.shape) +
                         " in the checkpoint but " + want + " in like");
    else if (!like[i].sharding().concrete_mesh())
      problems.push_back("leaf '" + paths[i] + "' of like has no devices (sharding " +
                         like[i].sharding().str() + ")");
  }
  if (opts.strict)
    for (size_t i = 0; i < info.leaves.size(); ++i)
      if (!matched[i])
        problems.push_back("leaf '" + info.leaves[i].path + "' (" +
                           type_str(info.leaves[i].dtype, info.leaves[i].shape) +
                           ") is in the checkpoint but not in like");
  if (problems.empty()) return out;
  std::string list;
  for (const auto& p : problems) list += "\n  " + p;
  throw ValueError("[" + std::string(kApi) + "] like does not match the checkpoint at " +
                   dir.string() + " (" + (dir / kSidecarFile).string() + "):" + list +
                   "\nExpected like to have the saved paths, dtypes and shapes (ckpt::inspect "
                   "lists them). Build like from the same configuration" +
                   (opts.strict ? ", or pass RestoreOptions{.strict = false} to skip stored "
                                  "leaves like lacks."
                                : "."));
}

// Copies the part of a row-major block `src` (box [s0, s1)) that lies in the box
// [t0, t1) into the row-major block `dst` of that box. Returns the elements copied.
int64_t copy_overlap(const unsigned char* src, const std::vector<int64_t>& s0,
                     const std::vector<int64_t>& s1, unsigned char* dst,
                     const std::vector<int64_t>& t0, const std::vector<int64_t>& t1, size_t isz) {
  size_t rank = s0.size();
  std::vector<int64_t> lo(rank), ext(rank);
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max(s0[d], t0[d]);
    ext[d] = std::min(s1[d], t1[d]) - lo[d];
    if (ext[d] <= 0) return 0;
    count *= ext[d];
  }
  if (rank == 0) {
    std::memcpy(dst, src, isz);
    return 1;
  }
  // Row-major strides (in elements) of both blocks.
  std::vector<int64_t> ss(rank, 1), ts(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    ss[d - 1] = ss[d] * (s1[d] - s0[d]);
    ts[d - 1] = ts[d] * (t1[d] - t0[d]);
  }
  // Trailing dimensions that both blocks hold whole form one contiguous run.
  size_t inner = rank - 1;
  int64_t run = ext[inner];
  while (inner > 0 && ext[inner] == s1[inner] - s0[inner] && ext[inner] == t1[inner] - t0[inner]) {
    --inner;
    run *= ext[inner];
  }
  std::vector<int64_t> i(inner, 0);  // odometer over the outer dimensions
  for (;;) {
    int64_t so = 0, to = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t at = lo[d] + (d < inner ? i[d] : 0);
      so += (at - s0[d]) * ss[d];
      to += (at - t0[d]) * ts[d];
    }
    std::memcpy(dst + to * static_cast<int64_t>(isz), src + so * static_cast<int64_t>(isz),
                static_cast<size_t>(run) * isz);
    size_t d = inner;
    while (d > 0) {
      if (++i[d - 1] < ext[d - 1]) break;
      i[d - 1] = 0;
      --d;
    }
    if (d == 0) break;
  }
  return count;
}

// Where the box [t0, t1) starts (in elements) inside the row-major block [s0, s1) when
// it is one contiguous run of it (inside it, whole in every dimension after the last
// one it cuts, one index wide in every dimension before); -1 otherwise.
int64_t contiguous_offset(const std::vector<int64_t>& s0, const std::vector<int64_t>& s1,
                          const std::vector<int64_t>& t0, const std::vector<int64_t>& t1) {
  size_t rank = s0.size();
  int cut = -1;  // the last dimension where the boxes differ
  for (size_t d = 0; d < rank; ++d) {
    if (t0[d] < s0[d] || t1[d] > s1[d]) return -1;
    if (t0[d] != s0[d] || t1[d] != s1[d]) cut = static_cast<int>(d);
  }
  for (int d = 0; d < cut; ++d)
    if (t1[static_cast<size_t>(d)] - t0[static_cast<size_t>(d)] != 1) return -1;
  int64_t off = 0;
  for (size_t d = 0; d < rank; ++d) off = off * (s1[d] - s0[d]) + (t0[d] - s0[d]);
  return off;
}

// One target block to build: a leaf, an index box, and the device that first holds it.
struct Target {
  size_t like = 0;
  std::vector<int64_t> start, stop;
  Device device;
  Array block;
};

std::vector<int64_t> key_of(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> k = a;
  k.insert(k.end(), b.begin(), b.end());
  return k;
}

}  // namespace

std::vector<Array> restore_leaves(const fs::path& dir, const std::vector<Array>& like,
                                  const std::vector<std::string>& paths,
                                  const RestoreOptions& opts) {
  Info info = read_sidecar(dir, kApi);
  std::vector<size_t> src = match_leaves(info, like, paths, dir, opts);
  // One tensor file, or one per process of a save by many processes.
  std::map<std::string, std::unique_ptr<TensorFile>> files;
  for (const auto& l : info.leaves)
    for (const auto& b : l.blocks)
      if (!files.count(b.file)) {
        if (b.file.find('/') != std::string::npos || b.file.rfind("tensors", 0) != 0)
          throw ValueError("[" + std::string(kApi) + "] leaf '" + l.path + "' names tensor file '" +
                           b.file + "' in " + (dir / kSidecarFile).string() +
                           ". Got a path outside the checkpoint; expected a tensors*.safetensors "
                           "name. The sidecar is damaged; restore another checkpoint.");
        files[b.file] = std::make_unique<TensorFile>(dir / b.file);
        cross_check(info, b.file, *files[b.file]);
      }
  auto file_of = [&](const BlockInfo& b) -> TensorFile& { return *files.at(b.file); };

  // The distinct target blocks of every leaf, each built once (on its first device).
  std::vector<Target> targets;
  std::vector<std::map<std::vector<int64_t>, size_t>> index(like.size());
  for (size_t i = 0; i < like.size(); ++i) {
    const Shape& shape = like[i].shape();
    NamedSharding s = like[i].sharding().normalized(like[i].ndim());
    const Mesh& mesh = *s.concrete_mesh();
    for (int k = 0; k < mesh.size(); ++k) {
      // Only this process's devices: each process reads the blocks it holds.
      if (mesh.devices()[static_cast<size_t>(k)].process_index() != process_index()) continue;
      Target t{i, {}, {}, mesh.devices()[static_cast<size_t>(k)], {}};
      for (const auto& sl : s.index_of(k, shape)) {
        t.start.push_back(sl.start);
        t.stop.push_back(sl.stop);
      }
      if (index[i].emplace(key_of(t.start, t.stop), targets.size()).second)
        targets.push_back(std::move(t));
    }
  }

  // Each stored block is CRC-checked once, by whichever target reaches it first.
  std::map<const BlockInfo*, std::once_flag> checked;
  for (size_t i : src)
    for (const auto& b : info.leaves[i].blocks) {
      checked[&b];
      file_of(b).prefetch(file_of(b).tensors().at(b.tensor));
    }
  auto verify = [&](const LeafInfo& l, const BlockInfo& b, const unsigned char* p) {
    std::call_once(checked.at(&b), [&] {
      uint32_t crc = crc32(p, static_cast<size_t>(b.nbytes));
      if (crc != b.crc32) {
        std::ostringstream m;
        m << "[" << kApi << "] leaf '" << l.path << "' is corrupt: its block '" << b.tensor
          << "' in " << file_of(b).path().string() << " has CRC-32 0x" << std::hex << crc
          << "; expected 0x" << b.crc32 << " (from " << (dir / kSidecarFile).string()
          << "). The file was damaged after saving; restore another checkpoint.";
        throw ValueError(m.str());
      }
    });
  };

  parallel_for(targets.size(), [&](size_t k) {
    Target& t = targets[k];
    const LeafInfo& l = info.leaves[src[t.like]];
    const size_t isz = static_cast<size_t>(itemsize(l.dtype));
    Shape shape;
    int64_t n = 1;
    for (size_t d = 0; d < t.start.size(); ++d) {
      shape.push_back(t.stop[d] - t.start[d]);
      n *= shape.back();
    }
    // A block that is one contiguous run of a stored block (the same box, or whole
    // rows of it) goes straight from the mapping to the device; otherwise the
    // overlapping parts are gathered into one host block first.
    for (const auto& b : l.blocks) {
      int64_t at = contiguous_offset(b.start, b.stop, t.start, t.stop);
      if (at < 0) continue;
      TensorFile& tf = file_of(b);
      const unsigned char* p = tf.bytes(tf.tensors().at(b.tensor));
      if (opts.verify_checksums) verify(l, b, p);
      const void* src = n ? static_cast<const void*>(p + at * static_cast<int64_t>(isz)) : &n;
      t.block = from_host(src, l.dtype, shape, t.device);
      return;
    }
    std::vector<unsigned char> host(static_cast<size_t>(n) * isz);
    int64_t got = 0;
    for (const auto& b : l.blocks) {
      bool overlaps = true;
      for (size_t d = 0; d < t.start.size(); ++d)
        overlaps = overlaps && std::max(b.start[d], t.start[d]) < std::min(b.stop[d], t.stop[d]);
      if (!overlaps) continue;
      TensorFile& tf = file_of(b);
      const unsigned char* p = tf.bytes(tf.tensors().at(b.tensor));
      if (opts.verify_checksums) verify(l, b, p);
      got += copy_overlap(p, b.start, b.stop, host.data(), t.start, t.stop, isz);
    }
    if (got != n)  // the sidecar reader checked the tiling; this guards the arithmetic
      throw ValueError("[" + std::string(kApi) + "] leaf '" + l.path +
                       "': the stored blocks cover " + std::to_string(got) + " of the " +
                       std::to_string(n) +
                       " elements a device needs. Got an incomplete "
                       "checkpoint; expected blocks that tile the leaf. Restore another one.");
    t.block = from_host(n ? static_cast<const void*>(host.data()) : &n, l.dtype, shape, t.device);
  });

  std::vector<Array> out;
  out.reserve(like.size());
  for (size_t i = 0; i < like.size(); ++i) {
    out.push_back(make_array_from_callback(like[i].shape(), like[i].dtype(), like[i].sharding(),
                                           [&](const ShardIndex& idx) {
                                             std::vector<int64_t> a, b;
                                             for (const auto& sl : idx) {
                                               a.push_back(sl.start);
                                               b.push_back(sl.stop);
                                             }
                                             return targets[index[i].at(key_of(a, b))].block;
                                           }));
  }
  return out;
}

}  // namespace tsr::ckpt::detail
