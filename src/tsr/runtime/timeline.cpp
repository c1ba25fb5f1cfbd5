#include "tsr/runtime/timeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "tsr/error.h"
#include "tsr/profiler.h"
#include "tsr/runtime/accelerator.h"
#include "tsr/runtime/runtime.h"

namespace tsr::detail::timeline {

std::atomic<bool> g_on{false};

namespace {

struct Event {
  int64_t t0 = 0;
  int64_t dur = 0;  // spans
  int track = kCaller;
  char ph = 'X';  // 'X' span, 'i' instant, 'C' counter
  const char* cat = "";
  std::string name;
  std::string args;  // body of a JSON object
  // Deferred (formatted when written): a memory counter's value, or a step.
  int64_t value = -1;  // memory counter: bytes in use
  StepFormat fmt = nullptr;
  const void* ex = nullptr;
  int step = 0, pos = 0;
  int64_t wait = 0;
};

// One thread's events; the recorder keeps every buffer alive past its thread.
struct Buffer {
  std::mutex mu;  // uncontended except while stop_trace() collects
  std::vector<Event> events;
  // The executables deferred steps point into, held until the file is written (a
  // thread's consecutive steps mostly share one: `last` skips the refcount then).
  std::vector<std::shared_ptr<const void>> keep;
  const void* last = nullptr;
};

struct Recorder {
  std::mutex mu;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::string path;  // while recording
  int64_t origin = 0;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: worker threads may record at exit
  return *r;
}

thread_local std::shared_ptr<Buffer> t_buffer;
thread_local int64_t t_wait_ns = 0;

Buffer& buffer() {
  if (!t_buffer) {
    t_buffer = std::make_shared<Buffer>();
    Recorder& r = recorder();
    std::lock_guard<std::mutex> lock(r.mu);
    r.buffers.push_back(t_buffer);
  }
  return *t_buffer;
}

void push(Event e) {
  Buffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.events.push_back(std::move(e));
}

// Fills a deferred event's strings.
void format(Event& e) {
  if (e.value >= 0) {
    e.name = "memory device " + std::to_string(detail::device_at(e.track).id);
    e.args = "\"live_bytes\":" + std::to_string(e.value);
  } else if (e.fmt) {
    e.fmt(e.ex, e.step, e.pos, e.wait, e.cat, e.name, e.args);
  }
}

std::string file_for_process(const std::string& path, int process, int processes) {
  if (processes <= 1) return path;
  std::string p = path;
  if (auto at = p.find("%p"); at != std::string::npos)
    return p.replace(at, 2, std::to_string(process));
  const size_t slash = p.find_last_of('/');
  const size_t dot = p.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string tag = ".p" + std::to_string(process);
  return has_ext ? p.insert(dot, tag) : p + tag;
}

// Microseconds with nanosecond digits, as trace viewers read "ts" and "dur".
void put_us(std::ostream& os, int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  os << buf;
}

// Never 0: Perfetto files tid 0 under the thread whose tid is the pid (process 1's
// caller would land on device 0's track).
int tid_of(int track) { return track == kCaller ? 1 : track + 2; }

void write_file(const std::string& path, std::vector<Event>& events, int64_t origin) {
  auto& rt = Runtime::get();
  const int pid = rt.process_index();
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t0 < b.t0; });
  std::ofstream os(path, std::ios::trunc);
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"tessera\"},\"traceEvents\":[\n";
  auto meta = [&](const char* what, int tid, const std::string& name, int sort) {
    os << "{\"ph\":\"M\",\"name\":\"" << what << "\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"name\":\"" << json_escape(name) << "\"}},\n";
    os << "{\"ph\":\"M\",\"name\":\"" << what << "_sort_index\",\"pid\":" << pid
       << ",\"tid\":" << tid << ",\"args\":{\"sort_index\":" << sort << "}}";
  };
  meta("process_name", tid_of(kCaller), "tessera process " + std::to_string(pid), pid);
  os << ",\n";
  meta("thread_name", tid_of(kCaller), "caller", 0);
  for (int d = rt.first_local(); d < rt.first_local() + rt.local_count(); ++d) {
    os << ",\n";
    meta("thread_name", tid_of(d), "device " + std::to_string(d) + " (cpu)", tid_of(d));
  }
  for (int d = 0; d < rt.accel_count(); ++d) {
    os << ",\n";
    const int t = detail::kAccelSlot + d;
    meta("thread_name", tid_of(t), "device " + std::to_string(d) + " (cuda)", tid_of(t));
  }
  for (Event& e : events) {
    format(e);
    os << ",\n{\"ph\":\"" << e.ph << "\",\"cat\":\"" << e.cat << "\",\"name\":\""
       << json_escape(e.name) << "\",\"pid\":" << pid << ",\"tid\":" << tid_of(e.track)
       << ",\"ts\":";
    put_us(os, e.t0 - origin);
    if (e.ph == 'X') {
      os << ",\"dur\":";
      put_us(os, e.dur);
    }
    if (e.ph == 'i') os << ",\"s\":\"t\"";
    os << ",\"args\":{" << e.args << "}}";
  }
  os << "\n]}\n";
  os.flush();
  if (!os)
    throw RuntimeError("[stop_trace] could not write the trace file. Got a write error on " + path +
                       "; expected a writable file. Check the disk space and the path.");
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void span(int track, const char* cat, std::string name, int64_t t0, int64_t t1, std::string args) {
  push(Event{t0, std::max<int64_t>(t1 - t0, 0), track, 'X', cat, std::move(name), std::move(args)});
}

void instant(int track, const char* cat, std::string name, std::string args) {
  push(Event{now_ns(), 0, track, 'i', cat, std::move(name), std::move(args)});
}

void memory(int dev, size_t live) {
  Event e;
  e.t0 = now_ns();
  e.track = dev;
  e.ph = 'C';
  e.cat = "memory";
  e.value = static_cast<int64_t>(live);
  push(std::move(e));
}

void step(int track, int64_t t0, int64_t t1, const void* ex, int step, int pos, int64_t wait_ns,
          StepFormat fmt, StepKeep keep) {
  Event e;
  e.t0 = t0;
  e.dur = std::max<int64_t>(t1 - t0, 0);
  e.track = track;
  e.ex = ex;
  e.step = step;
  e.pos = pos;
  e.wait = wait_ns;
  e.fmt = fmt;
  Buffer& b = buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.last != ex) {
    std::shared_ptr<const void> k = keep(ex);
    if (!k) {  // not shared-owned, so it may not live until the file: format now
      format(e);
      e.fmt = nullptr;
    } else {
      b.keep.push_back(std::move(k));
      b.last = ex;
    }
  }
  b.events.push_back(std::move(e));
}

void Scope::rename(std::string n) {
  if (!recording()) return;
  if (!text_) text_ = std::make_unique<Text>();
  text_->name = std::move(n);
}

void Scope::set_args(std::string a) {
  if (!recording()) return;
  if (!text_) text_ = std::make_unique<Text>();
  text_->args = std::move(a);
}

void Scope::finish() {
  std::string name = text_ && !text_->name.empty() ? std::move(text_->name) : std::string(name_);
  span(track_, cat_, std::move(name), t0_, now_ns(),
       text_ ? std::move(text_->args) : std::string());
}

void add_wait(int64_t ns) { t_wait_ns += ns; }

int64_t take_wait() {
  int64_t w = t_wait_ns;
  t_wait_ns = 0;
  return w;
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void start_from_env() {
  const char* p = std::getenv("TSR_TRACE");
  if (!p || !*p || profiler::is_tracing()) return;
  profiler::start_trace(p);
  // Written at exit: the recorder and the runtime are never destroyed, so both
  // outlive this handler.
  std::atexit([] {
    try {
      if (profiler::is_tracing()) profiler::stop_trace();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tsr: %s\n", e.what());
    }
  });
}

}  // namespace tsr::detail::timeline

namespace tsr::profiler {

using detail::timeline::recorder;

void start_trace(const std::string& path) {
  auto& r = recorder();
  auto& rt = detail::Runtime::get();  // the devices named in the file
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.path.empty())
    throw ValueError("[start_trace] a trace is already being recorded. Got start_trace(\"" + path +
                     "\") while recording to " + r.path +
                     "; expected one recording at a time. Call tsr::profiler::stop_trace() first.");
  if (path.empty())
    throw ValueError(
        "[start_trace] the trace file name is empty. Got \"\"; expected a path such as "
        "\"run.json\". Pass the file to write (or set TSR_TRACE=run.json).");
  std::string file =
      detail::timeline::file_for_process(path, rt.process_index(), rt.process_count());
  // Created now, so a bad path fails here rather than after the run.
  if (!std::ofstream(file, std::ios::trunc))
    throw ValueError("[start_trace] cannot create the trace file. Got " + file +
                     "; expected a writable path. Create its directory or choose another path.");
  for (auto& b : r.buffers) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->events.clear();
    b->keep.clear();
    b->last = nullptr;
  }
  r.path = file;
  r.origin = detail::timeline::now_ns();
  detail::timeline::g_on.store(true, std::memory_order_release);
}

void stop_trace() {
  auto& r = recorder();
  if (!is_tracing())
    throw RuntimeError(
        "[stop_trace] no trace is being recorded. Got stop_trace() without start_trace(); "
        "expected tsr::profiler::start_trace(path) (or TSR_TRACE) before it. Call "
        "start_trace first.");
  detail::Runtime::get().synchronize();  // queued work belongs in the file
  std::vector<detail::timeline::Event> events;
  std::vector<std::shared_ptr<const void>> keep;
  std::string file;
  int64_t origin = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.path.empty())
      throw RuntimeError(
          "[stop_trace] no trace is being recorded. Got stop_trace() without start_trace(); "
          "expected tsr::profiler::start_trace(path) (or TSR_TRACE) before it. Call "
          "start_trace first.");
    detail::timeline::g_on.store(false, std::memory_order_release);
    file = std::move(r.path);
    r.path.clear();
    origin = r.origin;
    for (auto& b : r.buffers) {
      std::lock_guard<std::mutex> bl(b->mu);
      for (auto& e : b->events) events.push_back(std::move(e));
      b->events.clear();
      for (auto& k : b->keep) keep.push_back(std::move(k));
      b->keep.clear();
      b->last = nullptr;
    }
  }
  detail::timeline::write_file(file, events, origin);  // reads the executables in `keep`
}

bool is_tracing() { return detail::timeline::on(); }

std::string trace_path() {
  auto& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.path;
}

}  // namespace tsr::profiler
