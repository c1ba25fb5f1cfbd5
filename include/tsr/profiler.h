#pragma once
// The timeline: a Chrome / Perfetto trace-event file of a run (open it in
// ui.perfetto.dev or chrome://tracing). TSR_TRACE=run.json records the whole run. Named
// as jax.profiler's start_trace / stop_trace.

#include <string>

namespace tsr::profiler {

/** Starts recording into `path` (JSON trace events, written by stop_trace()): one track
 *  per device stream and one for the caller, with every executed step, collective, host
 *  transfer, jit trace / compile / cache hit and allocator change. With several
 *  processes each writes its own file: "%p" in `path` becomes the process index, else
 *  ".p<index>" goes before the extension. ValueError when already recording or when
 *  the file cannot be created. */
void start_trace(const std::string& path);
/** Waits for queued device work, stops recording and writes the file; RuntimeError
 *  when not recording. */
void stop_trace();
/** True while recording. */
bool is_tracing();
/** The file being recorded ("" when not recording). */
std::string trace_path();

}  // namespace tsr::profiler
