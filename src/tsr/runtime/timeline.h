#pragma once
// The recorder behind tsr::trace: events go to a per-thread buffer (no shared lock
// on the hot path) and are written as Chrome trace events when recording stops. With
// recording off every probe is one relaxed load and a branch.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tsr::detail::timeline {

/** Set while recording. */
extern std::atomic<bool> g_on;
/** True while recording (the probes' branch). */
inline bool on() { return g_on.load(std::memory_order_relaxed); }
/** The caller's track (device tracks are device ids). */
constexpr int kCaller = -1;
/** Nanoseconds on the recorder's clock. */
int64_t now_ns();
/** A span [t0, t1) on `track` (device id or kCaller); `args` is the body of a JSON
 *  object ("\"bytes\":12") or empty. */
void span(int track, const char* cat, std::string name, int64_t t0, int64_t t1,
          std::string args = {});
/** A point event on `track`. */
void instant(int track, const char* cat, std::string name, std::string args = {});
/** Device `dev`'s memory counter: bytes handed out (what a viewer plots per device;
 *  cached bytes are left out so each device has one counter track). */
void memory(int dev, size_t live);
/** Formats a deferred step event when the file is written: the step `step` of the
 *  executable `ex` at position `pos`, with its wait, into a category, name and args. */
using StepFormat = void (*)(const void* ex, int step, int pos, int64_t wait_ns, const char*& cat,
                            std::string& name, std::string& args);
/** Keeps `ex` alive until the file is written (empty when it is not shared-owned). */
using StepKeep = std::shared_ptr<const void> (*)(const void* ex);
/** A span [t0, t1) on `track` for a step of an executable, formatted only when the file
 *  is written (the hot path stores numbers, no strings). */
void step(int track, int64_t t0, int64_t t1, const void* ex, int step, int pos, int64_t wait_ns,
          StepFormat fmt, StepKeep keep);
/** Adds to this thread's collective wait time (a rendezvous waiting for its peers). */
void add_wait(int64_t ns);
/** This thread's wait time since the last call, and resets it. */
int64_t take_wait();
/** `s` as the inside of a JSON string (quotes and control characters escaped). */
std::string json_escape(std::string_view s);
/** Starts recording when TSR_TRACE names a file (once, at runtime start), and
 *  writes it at exit. */
void start_from_env();

/** Adds the time from construction to destruction to this thread's wait time. */
class WaitClock {
 public:
  WaitClock() : t0_(on() ? now_ns() : -1) {}
  ~WaitClock() {
    if (t0_ >= 0) add_wait(now_ns() - t0_);
  }
  WaitClock(const WaitClock&) = delete;
  WaitClock& operator=(const WaitClock&) = delete;

 private:
  int64_t t0_;
};

/** A span on `track` from construction to destruction, named when recording. Off, it
 *  is a load, a branch and a null pointer: the name and args live on the heap only
 *  while recording. */
class Scope {
 public:
  /** Starts the span when recording (`name` is only read then). */
  Scope(int track, const char* cat, const char* name)
      : track_(track), cat_(cat), name_(name), t0_(on() ? now_ns() : -1) {}
  ~Scope() {
    if (t0_ >= 0) finish();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  /** True when this span is recorded. */
  bool recording() const { return t0_ >= 0; }
  /** Renames the span (when recording). */
  void rename(std::string n);
  /** Sets the span's JSON args body (when recording). */
  void set_args(std::string a);

 private:
  struct Text {
    std::string name, args;
  };
  void finish();
  int track_;
  const char* cat_;
  const char* name_;
  int64_t t0_;
  std::unique_ptr<Text> text_;  // a name built at run time, and args (recording only)
};

}  // namespace tsr::detail::timeline
