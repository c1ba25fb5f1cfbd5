// POSIX file helpers for checkpoints (full writes, fsync of files and directories) and
// the small thread fan-out that overlaps copies, CRCs and I/O of different blocks.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "tsr/checkpoint/format.h"
#include "tsr/error.h"

namespace tsr::ckpt::detail {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Fd::close(const std::filesystem::path& file, const char* api) {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0)
    throw RuntimeError("[" + std::string(api) + "] closing " + file.string() +
                       " failed: " + errno_text(errno) +
                       ". Got an I/O error; expected the data on disk. Check "
                       "the disk (space, permissions) and save again.");
}

void write_at(int fd, const void* data, size_t n, int64_t offset, const std::filesystem::path& file,
              const char* api) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw RuntimeError("[" + std::string(api) + "] writing " + file.string() +
                         " failed: " + (w < 0 ? errno_text(errno) : std::string("no progress")) +
                         ". Got an I/O error; expected every byte written. Check the disk "
                         "(space, permissions) and save again.");
    p += w;
    n -= static_cast<size_t>(w);
    offset += w;
  }
}

void sync_fd(int fd, const std::filesystem::path& file, const char* api) {
  if (::fsync(fd) != 0)
    throw RuntimeError("[" + std::string(api) + "] fsync of " + file.string() +
                       " failed: " + errno_text(errno) +
                       ". Got an I/O error; expected the data durable. Check "
                       "the disk and save again.");
}

void sync_dir(const std::filesystem::path& dir, const char* api) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0)
    throw RuntimeError("[" + std::string(api) + "] opening the directory " + dir.string() +
                       " to fsync it failed: " + errno_text(errno) +
                       ". Got an I/O error; expected a readable directory. Check permissions.");
  sync_fd(fd.get(), dir, api);
  fd.close(dir, api);
}

void parallel_for(size_t n, const std::function<void(size_t)>& f) {
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  size_t nt = std::min({n, cores, size_t{8}});
  if (nt <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < nt; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the ones running (and this one) do the rest
    }
  }
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tsr::ckpt::detail
