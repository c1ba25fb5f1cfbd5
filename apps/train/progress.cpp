#include "progress.h"

#include <unistd.h>

#include <cmath>

namespace train {

std::string format_bytes(int64_t bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
  return buf;
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

Progress::Progress(int64_t first, int64_t total, int log_every, std::FILE* out)
    : first_(first),
      total_(total),
      log_every_(log_every < 1 ? 1 : log_every),
      out_(out),
      live_(isatty(fileno(out)) != 0) {}

std::string Progress::line(const StepInfo& s) const {
  char buf[256];
  double eta = ema_seconds_ * static_cast<double>(total_ - s.step);
  std::snprintf(buf, sizeof buf,
                "step %5lld/%lld  loss %.4f  %8.0f tok/s  %6.1f ms/step  eta %s  mem/device %s",
                static_cast<long long>(s.step), static_cast<long long>(total_), s.loss,
                s.tokens_per_s, s.step_seconds * 1e3, format_seconds(eta).c_str(),
                format_bytes(s.peak_bytes).c_str());
  return buf;
}

void Progress::update(const StepInfo& s) {
  // The first step of a run includes tracing and lowering: keep it out of the ETA.
  if (s.step == first_ + 1)
    ema_seconds_ = 0;
  else
    ema_seconds_ = ema_seconds_ == 0 ? s.step_seconds : 0.9 * ema_seconds_ + 0.1 * s.step_seconds;
  if (live_) {
    const int width = 20;
    double frac = total_ > 0 ? static_cast<double>(s.step) / static_cast<double>(total_) : 1;
    int filled = static_cast<int>(frac * width);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(out_, "\r\033[K[%s] %s", bar.c_str(), line(s).c_str());
    open_ = true;
  } else if (s.step % log_every_ == 0 || s.step == total_ || s.step == first_ + 1) {
    std::fprintf(out_, "%s\n", line(s).c_str());
  }
  std::fflush(out_);
}

void Progress::finish() {
  if (open_) std::fprintf(out_, "\n");
  open_ = false;
  std::fflush(out_);
}

}  // namespace train
