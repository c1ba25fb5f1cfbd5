// Collectives over 8 devices spread over processes (issue 25), and Open MPI's own
// collectives over 8 ranks on the same data, for bench/processes_compare.py:
//   mpirun -np 8 processes_bench --mode mpi       MPI_Allreduce / Allgather / Alltoall
//   mpirun -np P processes_bench --mode tsr       jit(shard_map(psum / all_gather /
//                                                 all_to_all)) on a mesh of 8 devices,
//                                                 8 / P devices per process
//   processes_bench --mode tsr                    one process, 8 devices
// Each line: "<op> <bytes per device> <median microseconds>" (process 0 prints).
// A fixed iteration count per size (the same on every process) keeps ranks in step.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tsr/shard_map.h"
#include "tsr/tsr.h"

namespace {

using Clock = std::chrono::steady_clock;

int iterations(int64_t bytes) {
  return static_cast<int>(
      std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(bytes, 1), 5, 200));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double time_us(int iters, F&& f) {
  f();  // warm-up (and jit compile)
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return median(t);
}

void run_mpi(const std::vector<int64_t>& sizes) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (int64_t bytes : sizes) {
    const int count = static_cast<int>(bytes / 4);
    std::vector<float> in(static_cast<size_t>(count), 1.0F), out(static_cast<size_t>(count) * n);
    const int it = iterations(bytes);
    double ar = time_us(it, [&] {
      MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    double ag = time_us(it, [&] {
      MPI_Allgather(in.data(), count, MPI_FLOAT, out.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
    });
    double aa = time_us(it, [&] {
      MPI_Alltoall(in.data(), count / n, MPI_FLOAT, out.data(), count / n, MPI_FLOAT,
                   MPI_COMM_WORLD);
    });
    if (rank == 0) {
      std::printf("all_reduce %lld %.1f\nall_gather %lld %.1f\nall_to_all %lld %.1f\n",
                  static_cast<long long>(bytes), ar, static_cast<long long>(bytes), ag,
                  static_cast<long long>(bytes), aa);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
}

void run_tsr(const std::vector<int64_t>& sizes) {
  using namespace tsr;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    distributed::initialize(
        {.local_device_count = 8 / std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE"))});
  } else {
    init({.num_cpu_devices = 8});
  }
  Mesh mesh = make_mesh({8}, {"x"});
  for (int64_t bytes : sizes) {
    const int64_t count = bytes / 4;
    Array x = make_array_from_callback({8 * count}, float32, NamedSharding(mesh, P("x")),
                                       [&](const ShardIndex&) { return ones({count}); });
    auto smap = [&](auto body) {
      return jit(shard_map(
          body, {.mesh = mesh, .in_specs = P("x"), .out_specs = P("x"), .check_vma = false}));
    };
    auto ar = smap([](const Array& b) { return psum(b, "x"); });
    auto ag = smap([](const Array& b) { return all_gather(b, "x", {.axis = 0, .tiled = true}); });
    auto aa = smap([](const Array& b) { return all_to_all(b, "x", 0, 0, {.tiled = true}); });
    const int it = iterations(bytes);
    double t_ar = time_us(it, [&] { ar(x).block_until_ready(); });
    double t_ag = time_us(it, [&] { ag(x).block_until_ready(); });
    double t_aa = time_us(it, [&] { aa(x).block_until_ready(); });
    if (process_index() == 0) {
      std::printf("all_reduce %lld %.1f\nall_gather %lld %.1f\nall_to_all %lld %.1f\n",
                  static_cast<long long>(bytes), t_ar, static_cast<long long>(bytes), t_ag,
                  static_cast<long long>(bytes), t_aa);
      std::fflush(stdout);
    }
  }
  distributed::shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "tsr";
  int64_t max_mib = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mode") mode = argv[i + 1];
    if (a == "--max-mib") max_mib = std::atoll(argv[i + 1]);
  }
  std::vector<int64_t> sizes;
  for (int64_t b = 1024; b <= (max_mib << 20); b *= 8) sizes.push_back(b);
  if (sizes.back() != (max_mib << 20)) sizes.push_back(max_mib << 20);
  if (mode == "mpi") {
    run_mpi(sizes);
  } else {
    run_tsr(sizes);
  }
  return 0;
}
