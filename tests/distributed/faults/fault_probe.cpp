// One failure scenario across processes (run by faults_test.py under mpirun): the
// failing process misbehaves, every other one must raise a typed error within the
// timeout. Survivors print "RESULT <scenario> process <p> <ms> ms <type>: <message>"
// and exit 0 when the error is the expected one.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/runtime/runtime.h"
#include "tsr/shard_map.h"
#include "tsr/tsr.h"

using namespace tsr;

namespace {

// A collective every process takes part in: psum over all 8 devices.
Array collective(const Mesh& mesh, const Array& x) {
  return shard_map([](const Array& b) { return psum(b, "x"); },
                   {.mesh = mesh, .in_specs = P("x"), .out_specs = P()})(x);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  distributed::initialize();
  const int me = process_index();
  const bool culprit = me == process_count() - 1;
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(arange(16.0F).reshape({8, 2}), NamedSharding(mesh, P("x")));
  collective(mesh, x).block_until_ready();  // everyone is up and talking
  auto t0 = std::chrono::steady_clock::now();
  std::string type, msg;
  try {
    if (scenario == "kill" && culprit) std::raise(SIGKILL);
    if (scenario == "raise" && culprit) throw std::runtime_error("injected failure");
    if (scenario == "exit" && culprit) return 0;  // atexit leaves the group
    if (scenario == "diverge") {
      auto f = jit([&](const Array& a) { return culprit ? cos(a) : sin(a); });
      f(x).block_until_ready();
    } else if (scenario == "mismatch") {
      // The comm layer itself: the culprit passes half the element count.
      auto& rt = detail::Runtime::get();
      std::vector<int> ids;
      for (int d = 0; d < 8; ++d) ids.push_back(d);
      auto g = rt.group(ids);
      std::vector<float> buf(64, 1.0F);
      const int64_t count = culprit ? 32 : 64;
      std::vector<std::thread> th;
      std::string errs[8];
      for (int l = 0; l < local_device_count(); ++l)
        th.emplace_back([&, l] {
          try {
            std::vector<float> mine(buf);
            g->all_reduce(me * local_device_count() + l, mine.data(), mine.data(), count,
                          DType::Float32, detail::ReduceOp::Sum);
          } catch (const CommError& e) {
            errs[l] = e.what();
          }
        });
      for (auto& t : th) t.join();
      if (errs[0].empty()) throw std::runtime_error("no error from a mismatched all_reduce");
      throw CommError(errs[0]);
    } else {
      collective(mesh, x).block_until_ready();
    }
    type = "none";
  } catch (const CommError& e) {
    type = "CommError";
    msg = e.what();
  } catch (const tsr::Error& e) {
    type = "Error";
    msg = e.what();
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf("RESULT %s process %d %lld ms %s: %s\n", scenario.c_str(), me,
              static_cast<long long>(ms), type.c_str(), msg.c_str());
  std::fflush(stdout);
  // After a lost peer the world cannot finalize; leave without MPI_Finalize.
  std::_Exit(type == "CommError" ? 0 : 1);
}
