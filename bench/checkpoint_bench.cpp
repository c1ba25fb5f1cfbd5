// Checkpoint throughput: ckpt::save and ckpt::restore of a ~64 MiB tree sharded over 8
// simulated devices against a plain write()+fsync / read() of the same number of bytes,
// in the same run, on the same file system. Prints MB/s medians and the ratios.
//
//   build/bench/checkpoint_bench            # TSR_BENCH_CKPT_MIB=64 TSR_BENCH_REPS=7
//                                           # TSR_BENCH_CKPT_DIR=/tmp (where files go)
//
// Reads are measured twice: "hot" (the file is in the page cache, as right after a
// save) and "cold" (posix_fadvise(DONTNEED) drops the file's pages before each read, so
// both the plain read and restore go to the disk). Save and the plain write both fsync.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tsr/checkpoint.h"
#include "tsr/tsr.h"

using namespace tsr;
namespace fs = std::filesystem;

namespace {

int env_int(const char* name, int dflt) {
  const char* s = std::getenv(name);
  return s && std::atoi(s) > 0 ? std::atoi(s) : dflt;
}

double median_seconds(int reps, const std::function<void()>& before,
                      const std::function<void()>& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    before();
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

void plain_write(const fs::path& file, const std::vector<char>& buf) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  check(fd >= 0, "open");
  for (size_t at = 0; at < buf.size();) {
    ssize_t w = ::write(fd, buf.data() + at, buf.size() - at);
    check(w > 0, "write");
    at += static_cast<size_t>(w);
  }
  check(::fsync(fd) == 0, "fsync");
  ::close(fd);
}

void plain_read(const fs::path& file, std::vector<char>& buf) {
  int fd = ::open(file.c_str(), O_RDONLY);
  check(fd >= 0, "open");
  for (size_t at = 0; at < buf.size();) {
    ssize_t r = ::read(fd, buf.data() + at, buf.size() - at);
    check(r > 0, "read");
    at += static_cast<size_t>(r);
  }
  ::close(fd);
}

// Drops a file's pages from the page cache (they are clean after the fsync).
void drop_cache(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace

int main() {
  tsr::init({.num_cpu_devices = 8});
  const int64_t mib = env_int("TSR_BENCH_CKPT_MIB", 64);
  const int reps = env_int("TSR_BENCH_REPS", 7);
  const char* d = std::getenv("TSR_BENCH_CKPT_DIR");
  fs::path root = fs::path(d ? d : fs::temp_directory_path().string()) /
                  ("tsr_ckpt_bench_" + std::to_string(::getpid()));
  fs::create_directories(root);

  // A model-like tree: two row-sharded and one column-sharded matrix, a replicated bias.
  Mesh mesh = make_mesh({8}, {"data"});
  const int64_t rows = std::max<int64_t>(8, mib * 1024 * 1024 / 4 / 4 / 1024 / 8 * 8);
  std::map<std::string, Array> tree = {
      {"w1", device_put(iota({rows, 1024}), NamedSharding(mesh, P("data")))},
      {"w2", device_put(iota({1024, rows * 2}), NamedSharding(mesh, P(nullptr, "data")))},
      {"emb", device_put(iota({rows, 1024}), NamedSharding(mesh, P("data")))},
      {"bias", device_put(iota({1024}), NamedSharding(mesh, P()))}};
  int64_t bytes = 0;
  for (const auto& [k, v] : tree) bytes += v.nbytes();
  Mesh other = make_mesh({4, 2}, {"x", "y"});
  std::map<std::string, Array> like_same, like_other;
  for (const auto& [k, v] : tree) {
    like_same[k] = shape_dtype_struct(v.shape(), v.dtype(), v.sharding());
    like_other[k] = shape_dtype_struct(v.shape(), v.dtype(),
                                       NamedSharding(other, v.ndim() == 2 ? P("y", "x") : P("x")));
  }
  synchronize();

  std::vector<char> buf(static_cast<size_t>(bytes), 1), in(static_cast<size_t>(bytes), 0);
  fs::path plain = root / "plain.bin", dir = root / "ckpt";
  fs::path tensors = dir / "tensors.safetensors";
  auto none = [] {};
  double w = median_seconds(reps, none, [&] { plain_write(plain, buf); });
  double s = median_seconds(reps, none, [&] { ckpt::save(dir, tree); });
  double rh = median_seconds(reps, none, [&] { plain_read(plain, in); });
  double th = median_seconds(reps, none, [&] { ckpt::restore(dir, like_same); });
  double nh = median_seconds(reps, none,
                             [&] { ckpt::restore(dir, like_same, {.verify_checksums = false}); });
  double oh = median_seconds(reps, none, [&] { ckpt::restore(dir, like_other); });
  double rc = median_seconds(
      reps, [&] { drop_cache(plain); }, [&] { plain_read(plain, in); });
  double tc = median_seconds(
      reps, [&] { drop_cache(tensors); }, [&] { ckpt::restore(dir, like_same); });

  double mb = static_cast<double>(bytes) / 1e6;
  std::printf("checkpoint_bench: %.1f MB over 8 devices, %d reps, medians, files in %s\n", mb, reps,
              root.c_str());
  std::printf("%-34s %9s %9s %7s\n", "case", "MB/s", "plain", "ratio");
  auto row = [&](const char* name, double t, double base) {
    std::printf("%-34s %9.0f %9.0f %6.2fx\n", name, mb / t, mb / base, base / t);
  };
  row("save (fsync) vs write+fsync", s, w);
  row("restore, same layout, hot", th, rh);
  row("restore, no CRC check, hot", nh, rh);
  row("restore onto (4,2) mesh, hot", oh, rh);
  row("restore, same layout, cold", tc, rc);
  fs::remove_all(root);
  return 0;
}
