// Collectives over 8 devices spread over processes (issue 25), and Open MPI's own
// collectives over 8 ranks on the same data, for bench/processes_compare.py:
//   mpirun -np 8 processes_bench --mode mpi       MPI_Allreduce / Allgather / Alltoall
//   mpirun -np P processes_bench --mode tsr       jit(shard_map(psum / all_gather /
//                                                 all_to_all)) on a mesh of 8 devices,
//                                                 8 / P devices per process
//   processes_bench --mode tsr                    one process, 8 devices
//   [mpirun -np P] processes_bench --mode group   the comm layer alone: the group of the
//                                                 8 devices called from one thread per
//                                                 local device on reused buffers, as
//                                                 MPI's are
// Each line: "<op> <bytes per device> <median microseconds>" (process 0 prints).
// A fixed iteration count per size (the same on every process) keeps ranks in step.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/runtime/runtime.h"
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

// One size's line per op, from the process that prints.
void print_row(int64_t bytes, double ar, double ag, double aa) {
  const auto b = static_cast<long long>(bytes);
  std::printf("all_reduce %lld %.1f\nall_gather %lld %.1f\nall_to_all %lld %.1f\n", b, ar, b, ag, b,
              aa);
  std::fflush(stdout);
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
    if (rank == 0) print_row(bytes, ar, ag, aa);
  }
  MPI_Finalize();
}

void start_tsr() {
  using namespace tsr;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    distributed::initialize(
        {.local_device_count = 8 / std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE"))});
  } else {
    init({.num_cpu_devices = 8});
  }
}

void run_group(const std::vector<int64_t>& sizes) {
  using namespace tsr;
  start_tsr();
  std::vector<int> ids = {0, 1, 2, 3, 4, 5, 6, 7}, local;
  for (int r = 0; r < 8; ++r)
    if (devices()[static_cast<size_t>(r)].process_index() == process_index()) local.push_back(r);
  auto g = detail::Runtime::get().group(ids);
  for (int64_t bytes : sizes) {
    const int64_t count = bytes / 4;
    const int it = iterations(bytes);
    std::vector<std::vector<float>> in(local.size()), out(local.size());
    for (size_t i = 0; i < local.size(); ++i) {
      in[i].assign(static_cast<size_t>(count), 1.0F);
      out[i].assign(static_cast<size_t>(8 * count), 0.0F);
    }
    // One thread per local device runs the op `it` + 1 times; the first one's clock
    // times each call after the first (each call waits for every device).
    auto time_op = [&](auto op) {
      std::vector<double> t;
      std::vector<std::thread> th;
      for (size_t i = 0; i < local.size(); ++i)
        th.emplace_back([&, i] {
          for (int k = 0; k <= it; ++k) {
            auto t0 = Clock::now();
            op(local[i], in[i].data(), out[i].data());
            if (i == 0 && k > 0)
              t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          }
        });
      for (auto& x : th) x.join();
      return median(t);
    };
    using detail::ReduceOp;
    double ar = time_op([&](int r, const float* a, float* b) {
      g->all_reduce(r, a, b, count, DType::Float32, ReduceOp::Sum);
    });
    double ag = time_op(
        [&](int r, const float* a, float* b) { g->all_gather(r, a, b, count, DType::Float32); });
    double aa = time_op([&](int r, const float* a, float* b) {
      g->all_to_all(r, a, b, count / 8, DType::Float32);
    });
    if (process_index() == 0) print_row(bytes, ar, ag, aa);
  }
  distributed::shutdown();
}

void run_tsr(const std::vector<int64_t>& sizes) {
  using namespace tsr;
  start_tsr();
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
    if (process_index() == 0) print_row(bytes, t_ar, t_ag, t_aa);
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
  } else if (mode == "group") {
    run_group(sizes);
  } else {
    run_tsr(sizes);
  }
  return 0;
}
