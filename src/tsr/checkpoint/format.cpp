// The sidecar (checkpoint.json) in both directions, and safetensors dtype names. The
// reader checks every field's type and every block's geometry, so that restore and
// inspect see only well-formed metadata and a damaged file is a ValueError, not a crash.
#include "tsr/checkpoint/format.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "tsr/error.h"

namespace tsr::ckpt::detail {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// safetensors names (https://github.com/huggingface/safetensors), indexed by DType;
// C64 is safetensors' complex64, C128 ours in its style (safetensors has none).
constexpr std::array<std::pair<DType, const char*>, 15> kDTypeNames = {{
    {DType::Bool, "BOOL"},
    {DType::Int8, "I8"},
    {DType::Int16, "I16"},
    {DType::Int32, "I32"},
    {DType::Int64, "I64"},
    {DType::UInt8, "U8"},
    {DType::UInt16, "U16"},
    {DType::UInt32, "U32"},
    {DType::UInt64, "U64"},
    {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"},
    {DType::Float32, "F32"},
    {DType::Float64, "F64"},
    {DType::Complex64, "C64"},
    {DType::Complex128, "C128"},
}};

nlohmann::ordered_json mesh_json(const MeshInfo& m) {
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (AxisType t : m.axis_types) types.push_back(axis_type_name(t));
  return {{"axis_names", m.axis_names},
          {"axis_sizes", m.axis_sizes},
          {"axis_types", types},
          {"device_ids", m.device_ids}};
}

// One entry per dimension: null (unsharded), "x", or ["x", "y"] (major first).
nlohmann::ordered_json spec_json(const PartitionSpec& p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& e : p.entries()) {
    if (e.axes().empty())
      out.push_back(nullptr);
    else if (e.axes().size() == 1)
      out.push_back(e.axes()[0]);
    else
      out.push_back(e.axes());
  }
  return out;
}

// Field access with the error every malformed sidecar gets: which field, what it is.
class SidecarReader {
 public:
  SidecarReader(fs::path file, const char* api) : file_(std::move(file)), api_(api) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ValueError("[" + std::string(api_) + "] the sidecar " + file_.string() +
                     " is malformed: " + where + " " + what +
                     ". The checkpoint is damaged or was not written by tsr::ckpt::save; "
                     "save it again or restore an older checkpoint.");
  }
  const json& field(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) fail(where, "is not a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, std::string("has no field \"") + key + "\"");
    return *it;
  }
  int64_t integer(const json& v, const std::string& where, int64_t lo = 0,
                  int64_t hi = std::numeric_limits<int64_t>::max()) const {
    if (!v.is_number_integer()) fail(where, "is not an integer (got " + v.dump() + ")");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(where, "is out of range (got " + v.dump() + ")");
    int64_t x = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
    if (x < lo || x > hi) fail(where, "is out of range (got " + v.dump() + ")");
    return x;
  }
  std::string string(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(where, "is not a string (got " + v.dump() + ")");
    return v.get<std::string>();
  }
  const json& array(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, "is not a JSON array (got " + v.dump().substr(0, 60) + ")");
    return v;
  }
  std::vector<int64_t> ints(const json& v, const std::string& where) const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < array(v, where).size(); ++i)
      out.push_back(integer(v[i], where + "[" + std::to_string(i) + "]"));
    return out;
  }

  MeshInfo mesh(const json& j, const std::string& where) const {
    MeshInfo m;
    for (const auto& n : array(field(j, "axis_names", where), where + ".axis_names"))
      m.axis_names.push_back(string(n, where + ".axis_names[]"));
    for (const auto& n : array(field(j, "axis_sizes", where), where + ".axis_sizes"))
      m.axis_sizes.push_back(static_cast<int>(integer(n, where + ".axis_sizes[]", 1, 1 << 20)));
    for (const auto& n : array(field(j, "axis_types", where), where + ".axis_types")) {
      std::string t = string(n, where + ".axis_types[]");
      if (t == "Auto")
        m.axis_types.push_back(AxisType::Auto);
      else if (t == "Explicit")
        m.axis_types.push_back(AxisType::Explicit);
      else if (t == "Manual")
        m.axis_types.push_back(AxisType::Manual);
      else
        fail(where + ".axis_types", "holds the unknown axis type \"" + t + "\"");
    }
    for (const auto& n : array(field(j, "device_ids", where), where + ".device_ids"))
      m.device_ids.push_back(static_cast<int>(integer(n, where + ".device_ids[]", 0, 1 << 20)));
    int64_t count = 1;
    for (int s : m.axis_sizes) count *= s;
    if (m.axis_sizes.empty() && m.device_ids.empty()) count = 0;  // no leaves: no mesh
    if (m.axis_names.size() != m.axis_sizes.size() || m.axis_types.size() != m.axis_sizes.size() ||
        static_cast<int64_t>(m.device_ids.size()) != count)
      fail(where, "has axis names, sizes, types and device ids that do not agree");
    return m;
  }

  PartitionSpec spec(const json& j, size_t rank, const std::string& where) const {
    std::vector<PartitionEntry> entries;
    if (array(j, where).size() > rank) fail(where, "has more entries than the leaf has dimensions");
    for (const auto& e : j) {
      if (e.is_null()) {
        entries.emplace_back();
      } else if (e.is_string()) {
        entries.emplace_back(e.get<std::string>());
      } else {
        Axes axes;
        for (const auto& a : array(e, where + "[]")) axes.push_back(string(a, where + "[][]"));
        entries.emplace_back(axes);
      }
    }
    return PartitionSpec(entries);
  }

  BlockInfo block(const json& j, const LeafInfo& leaf, const std::string& where) const {
    BlockInfo b;
    b.start = ints(field(j, "start", where), where + ".start");
    b.stop = ints(field(j, "stop", where), where + ".stop");
    b.tensor = string(field(j, "tensor", where), where + ".tensor");
    if (j.contains("file")) b.file = string(j.at("file"), where + ".file");
    b.nbytes = integer(field(j, "nbytes", where), where + ".nbytes");
    b.crc32 = static_cast<uint32_t>(integer(field(j, "crc32", where), where + ".crc32", 0,
                                            std::numeric_limits<uint32_t>::max()));
    size_t rank = leaf.shape.size();
    if (b.start.size() != rank || b.stop.size() != rank)
      fail(where, "has an index box of another rank than the leaf's " + shape_str(leaf.shape));
    int64_t n = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (b.start[d] > b.stop[d] || b.stop[d] > leaf.shape[d])
        fail(where, "has an index box outside the leaf's shape " + shape_str(leaf.shape));
      n *= b.stop[d] - b.start[d];
    }
    if (b.nbytes != n * itemsize(leaf.dtype))
      fail(where + ".nbytes", "does not match its index box (" + std::to_string(b.nbytes) +
                                  " bytes for " + std::to_string(n) + " elements of " +
                                  dtype_name(leaf.dtype) + ")");
    return b;
  }

  // The blocks must tile the leaf exactly: disjoint, and together every element.
  void check_tiling(const LeafInfo& leaf, const std::string& where) const {
    int64_t total = 0;
    const auto& bs = leaf.blocks;
    for (size_t i = 0; i < bs.size(); ++i) {
      int64_t v = 1;
      for (size_t d = 0; d < leaf.shape.size(); ++d) v *= bs[i].stop[d] - bs[i].start[d];
      total += v;
      for (size_t k = 0; k < i && v > 0; ++k) {
        bool overlap = true;
        for (size_t d = 0; d < leaf.shape.size(); ++d)
          overlap = overlap && std::max(bs[i].start[d], bs[k].start[d]) <
                                   std::min(bs[i].stop[d], bs[k].stop[d]);
        if (overlap)
          fail(where, "has blocks that overlap (" + bs[k].tensor + ", " + bs[i].tensor + ")");
      }
    }
    if (total != numel(leaf.shape))
      fail(where, "has blocks that cover " + std::to_string(total) + " of its " +
                      std::to_string(numel(leaf.shape)) + " elements");
  }

  LeafInfo leaf(const json& j, const MeshInfo& top, const std::string& where) const {
    LeafInfo l;
    l.path = string(field(j, "path", where), where + ".path");
    std::string w = where + " ('" + l.path + "')";
    std::string dt = string(field(j, "dtype", w), w + ".dtype");
    try {
      l.dtype = dtype_from_name(dt);
    } catch (const ValueError&) {
      fail(w + ".dtype", "names the unknown dtype \"" + dt + "\"");
    }
    l.shape = ints(field(j, "shape", w), w + ".shape");
    if (l.shape.size() > 64) fail(w + ".shape", "has more than 64 dimensions");
    try {
      check_shape(l.shape, "ckpt", itemsize(l.dtype));
    } catch (const ValueError&) {
      fail(w + ".shape", "is too large (" + shape_str(l.shape) + ")");
    }
    try {
      l.spec = spec(field(j, "spec", w), l.shape.size(), w + ".spec");
    } catch (const ValueError& e) {
      if (std::string(e.what()).find("is malformed") != std::string::npos) throw;
      fail(w + ".spec", std::string("is not a valid PartitionSpec (") + e.what() + ")");
    }
    l.mesh = j.contains("mesh") ? mesh(j["mesh"], w + ".mesh") : top;
    const json& blocks = array(field(j, "blocks", w), w + ".blocks");
    for (size_t k = 0; k < blocks.size(); ++k)
      l.blocks.push_back(block(blocks[k], l, w + ".blocks[" + std::to_string(k) + "]"));
    check_tiling(l, w);
    return l;
  }

 private:
  fs::path file_;
  const char* api_;
};

}  // namespace

const char* safetensors_dtype(DType t) {
  for (const auto& [d, n] : kDTypeNames)
    if (d == t) return n;
  return "?";
}

std::optional<DType> dtype_from_safetensors(const std::string& name) {
  for (const auto& [d, n] : kDTypeNames)
    if (name == n) return d;
  return std::nullopt;
}

std::string sidecar_text(const Info& info) {
  using nlohmann::ordered_json;
  // One line per block and per leaf header keeps the file readable and diffable.
  auto line = [](const ordered_json& j) { return j.dump(); };
  std::string out = "{\n \"format\": " + line(kFormatName) +
                    ",\n \"format_version\": " + std::to_string(info.format_version) +
                    ",\n \"tensors\": " + line(kTensorsFile) +
                    ",\n \"mesh\": " + mesh_json(info.mesh).dump() + ",\n \"leaves\": [";
  for (size_t i = 0; i < info.leaves.size(); ++i) {
    const LeafInfo& l = info.leaves[i];
    ordered_json head = {{"path", l.path},
                         {"dtype", dtype_name(l.dtype)},
                         {"shape", l.shape},
                         {"spec", spec_json(l.spec)}};
    if (!(l.mesh == info.mesh)) head["mesh"] = mesh_json(l.mesh);
    std::string h = head.dump();
    h.pop_back();  // reopen the object for "blocks"
    out += (i ? ",\n  " : "\n  ") + h + ", \"blocks\": [";
    for (size_t k = 0; k < l.blocks.size(); ++k) {
      const BlockInfo& b = l.blocks[k];
      ordered_json bj = {{"start", b.start},
                         {"stop", b.stop},
                         {"tensor", b.tensor},
                         {"nbytes", b.nbytes},
                         {"crc32", b.crc32}};
      if (b.file != kTensorsFile) bj["file"] = b.file;  // a save by many processes
      out += (k ? ",\n   " : "\n   ") + bj.dump();
    }
    out += "]}";
  }
  return out + "\n ]\n}\n";
}

Info read_sidecar(const fs::path& dir, const char* api) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ValueError("[" + std::string(api) + "] there is no checkpoint directory at " +
                     dir.string() + ". Got " + (fs::exists(dir, ec) ? "a file" : "no such path") +
                     "; expected a directory written by tsr::ckpt::save. Check the path "
                     "(ckpt::latest_step finds the newest step under a root).");
  fs::path file = dir / kSidecarFile;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw ValueError("[" + std::string(api) + "] " + dir.string() +
                     " is not a complete checkpoint: its sidecar " + file.string() +
                     " is missing or unreadable. Got a directory without checkpoint.json; "
                     "expected one written by tsr::ckpt::save (a save that did not finish "
                     "leaves no sidecar). Restore another checkpoint.");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  SidecarReader r(file, api);
  try {
    j = json::parse(text.str());
  } catch (const json::exception& e) {
    r.fail("the file", std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) r.fail("the top level", "is not a JSON object");
  if (r.string(r.field(j, "format", "the top level"), "\"format\"") != kFormatName)
    r.fail("\"format\"", std::string("is not \"") + kFormatName + "\"");
  int64_t version = r.integer(r.field(j, "format_version", "the top level"), "\"format_version\"");
  if (version != kFormatVersion)
    throw ValueError("[" + std::string(api) + "] the checkpoint at " + dir.string() +
                     " has an unknown format version. Got format_version " +
                     std::to_string(version) + " in " + file.string() + "; expected " +
                     std::to_string(kFormatVersion) +
                     ". It was written by another Tessera version; read it with that version.");
  Info info;
  info.format_version = static_cast<int>(version);
  info.mesh = r.mesh(r.field(j, "mesh", "the top level"), "\"mesh\"");
  const json& leaves = r.array(r.field(j, "leaves", "the top level"), "\"leaves\"");
  std::set<std::string> paths, tensors;
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::string where = "leaves[" + std::to_string(i) + "]";
    LeafInfo l = r.leaf(leaves[i], info.mesh, where);
    if (!paths.insert(l.path).second) r.fail(where, "repeats the path '" + l.path + "'");
    for (const auto& b : l.blocks)
      if (!tensors.insert(b.tensor).second)
        r.fail(where, "repeats the tensor name '" + b.tensor + "'");
    info.leaves.push_back(std::move(l));
  }
  return info;
}

}  // namespace tsr::ckpt::detail
