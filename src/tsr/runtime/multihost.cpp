// multihost utilities over the control channel: small host exchanges between processes
// (process_allgather in comm/process.h), on the calling thread, in program order.
#include "tsr/multihost.h"

#include <cstring>
#include <sstream>

#include "tsr/comm/process.h"
#include "tsr/core/array_impl.h"
#include "tsr/distributed.h"
#include "tsr/error.h"
#include "tsr/ops.h"

namespace tsr::multihost {
namespace {

// x's value on this process as bytes, after a header that names its type.
std::string serialize(const Array& x) {
  Array here = x.is_fully_addressable() ? x : device_put(x, local_devices()[0]);
  MeshScope no_mesh{Mesh()};  // a context mesh would place the reshape's result on it
  std::vector<uint8_t> v = here.reshape({-1}).view(uint8).to_vector<uint8_t>();
  std::ostringstream os;
  os << dtype_name(x.dtype()) << ':' << shape_str(x.shape()) << '\n';
  return os.str() + std::string(v.begin(), v.end());
}

std::string header_of(const std::string& msg) { return msg.substr(0, msg.find('\n')); }

Array deserialize(const std::string& msg, DType dt, const Shape& shape) {
  const size_t cut = msg.find('\n') + 1;
  const auto* p = reinterpret_cast<const uint8_t*>(msg.data() + cut);
  return from_host(p, dt, shape, local_devices()[0]);
}

std::vector<std::string> gather_all(const std::string& bytes, const char* op) {
  std::vector<int> all = process_indices();
  if (all.size() == 1) return {bytes};
  return detail::process_allgather(all, bytes, op);
}

// Every process's x (each read whole on its process), checked to agree in type.
std::vector<Array> gather_values(const Array& x, const char* op) {
  detail::check_concrete(x, op);
  auto msgs = gather_all(serialize(x), op);
  std::vector<Array> out;
  for (size_t p = 0; p < msgs.size(); ++p) {
    if (header_of(msgs[p]) != header_of(msgs[0]))
      throw ValueError(std::string("[") + op +
                       "] processes passed arrays of different types. Got " + header_of(msgs[0]) +
                       " on process 0 and " + header_of(msgs[p]) + " on process " +
                       std::to_string(p) + "; expected the same shape and dtype on every process.");
    out.push_back(deserialize(msgs[p], x.dtype(), x.shape()));
  }
  return out;
}

}  // namespace

Array process_allgather(const Array& x, bool tiled) {
  detail::check_concrete(x, "process_allgather");
  if (!x.is_fully_addressable()) {
    if (!tiled)
      throw ValueError(
          "[process_allgather] Gathering global non-fully-addressable arrays only supports "
          "tiled=True. Got tiled=false for an array on " +
          x.sharding().str() + "; expected tiled=true (its value is the whole global array).");
    // The global value: replicated on its mesh (a collective), then read here.
    Array r = device_put(x, NamedSharding(*x.sharding().concrete_mesh(), P()));
    return device_put(r, local_devices()[0]);
  }
  MeshScope no_mesh{Mesh()};  // the result is this process's, not a context mesh's
  std::vector<Array> parts = gather_values(x, "process_allgather");
  if (!tiled) return stack(parts, 0);
  if (x.ndim() == 0)
    for (auto& p : parts) p = reshape(p, {1});
  return concatenate(parts, 0);
}

Array broadcast_one_to_all(const Array& x, std::optional<bool> is_source) {
  detail::check_concrete(x, "broadcast_one_to_all");
  const bool me = is_source ? *is_source : process_index() == 0;
  auto flags = gather_all(me ? "1" : "0", "broadcast_one_to_all");
  int source = -1, sources = 0;
  for (size_t p = 0; p < flags.size(); ++p)
    if (flags[p] == "1") {
      ++sources;
      if (source < 0) source = static_cast<int>(p);
    }
  if (sources != 1)
    throw ValueError("[broadcast_one_to_all] exactly one process must be the source. Got " +
                     std::to_string(sources) +
                     " processes with is_source=true; expected 1 (JAX would sum several "
                     "sources). Pass is_source=true on one process only.");
  return gather_values(x, "broadcast_one_to_all")[static_cast<size_t>(source)];
}

void sync_global_devices(const std::string& name) {
  auto names = gather_all(name, "sync_global_devices");
  for (size_t p = 0; p < names.size(); ++p)
    if (names[p] != name)
      throw AssertionError("[sync_global_devices] sync_global_devices name mismatch ('" + name +
                           "'). Got '" + names[p] + "' on process " + std::to_string(p) + " and '" +
                           name + "' on process " + std::to_string(process_index()) +
                           "; expected the same name on every process. The processes reached "
                           "different barriers: they run different code from here on.");
}

void assert_equal(const Array& x, const std::string& fail_message) {
  std::vector<Array> all = gather_values(x, "assert_equal");
  const auto mine = serialize(x);
  for (size_t p = 0; p < all.size(); ++p) {
    if (serialize(all[p]) == mine) continue;
    throw AssertionError("[assert_equal] " + (fail_message.empty() ? "" : fail_message + ". ") +
                         "Got a value on process " + std::to_string(process_index()) +
                         " that differs from process " + std::to_string(p) +
                         "'s; expected the same value on every process.");
  }
}

}  // namespace tsr::multihost
