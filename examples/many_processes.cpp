// Many processes (README "Running on many processes"): every process runs this same
// program; the mesh spans all of their devices.
//   TSR_NUM_CPU_DEVICES=4 mpirun -np 2 ./many_processes     (or run it alone: 1 process)
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <tsr/tsr.h>

int main() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) tsr::distributed::initialize();
  const int P = tsr::process_count(), me = tsr::process_index();
  tsr::Mesh mesh = tsr::make_mesh({tsr::device_count()}, {"x"});
  // Each process passes its own rows, filled with its index; the global shape is inferred.
  tsr::Array local = tsr::full({16 / P, 4}, me, tsr::float32, tsr::local_devices()[0]);
  tsr::Array x =
      tsr::make_array_from_process_local_data(tsr::NamedSharding(mesh, tsr::P("x")), local);
  // A jit over the global array: the sum is replicated, so every process can read it.
  tsr::Array total = tsr::jit([](const tsr::Array& a) { return tsr::sum(a); })(x);
  std::printf("process %d of %d: global shape (%lld, %lld), %zu local shards, sum %g\n", me, P,
              static_cast<long long>(x.shape()[0]), static_cast<long long>(x.shape()[1]),
              x.addressable_shards().size(), total.item<float>());
  // Every process's value, gathered.
  std::vector<float> who =
      tsr::multihost::process_allgather(tsr::scalar(static_cast<float>(me))).to_vector<float>();
  if (me == 0)
    std::printf("process_allgather of the indices: %zu values, last %g\n", who.size(), who.back());
  tsr::distributed::shutdown();
  return 0;
}
