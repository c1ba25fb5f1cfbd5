#pragma once
// Progress of a training run: a live line on a terminal, plain log lines otherwise.
#include <cstdint>
#include <cstdio>
#include <string>

namespace train {

/** What one step reports. */
struct StepInfo {
  int64_t step = 0;        /**< steps done, from 1 */
  double loss = 0;         /**< this step's loss */
  double tokens_per_s = 0; /**< tokens of this step / its wall time */
  double step_seconds = 0; /**< wall time of the step */
  int64_t peak_bytes = 0;  /**< largest peak_bytes_in_use over the mesh's devices */
};

/** Prints steps to `out`: on a terminal one line rewritten in place (with a bar and
 *  an ETA); otherwise one line every `log_every` steps and at the last step. */
class Progress {
 public:
  /** A run of `total` steps starting after step `first` (non-zero when resumed). */
  Progress(int64_t first, int64_t total, int log_every, std::FILE* out = stdout);
  /** Reports a finished step. */
  void update(const StepInfo& s);
  /** Ends the live line (prints the newline the terminal mode held back). */
  void finish();
  /** True when printing to a terminal. */
  bool live() const { return live_; }

 private:
  std::string line(const StepInfo& s) const;
  int64_t first_, total_;
  int log_every_;
  std::FILE* out_;
  bool live_, open_ = false;
  double ema_seconds_ = 0;  // smoothed step time for the ETA
};

/** "12.3 MiB" */
std::string format_bytes(int64_t bytes);
/** "1m05s" */
std::string format_seconds(double s);

}  // namespace train
