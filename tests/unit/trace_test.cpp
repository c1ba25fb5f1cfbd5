// The timeline (TSR_TRACE / tsr::trace): the file is valid Chrome trace-event JSON with
// one track per device and one for the caller, and holds the run's steps,
// collectives, host transfers, jit events and memory counters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/error_of.h"
#include "tsr/tsr.h"

using namespace tsr;
using json = nlohmann::json;

namespace {

std::string temp_file(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("tsr_trace_" + tag + "_" + std::to_string(getpid()) + ".json"))
      .string();
}

json read_trace(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  json j = json::parse(in);  // throws (fails the test) on malformed JSON
  std::filesystem::remove(path);
  return j;
}

std::vector<json> events_of(const json& j, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

bool has_name(const std::vector<json>& evs, const std::string& name) {
  return std::any_of(evs.begin(), evs.end(), [&](const json& e) { return e.at("name") == name; });
}

// Spans on one track nest: each starts after, and ends before, the span it starts in.
void expect_nested(const std::vector<json>& spans) {
  std::map<int, std::vector<std::pair<double, double>>> by_tid;
  for (const auto& e : spans)
    by_tid[e.at("tid").get<int>()].push_back(
        {e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>()});
  for (auto& [tid, v] : by_tid) {
    std::sort(v.begin(), v.end(), [](auto a, auto b) {
      return a.first < b.first || (a.first == b.first && a.second > b.second);
    });
    std::vector<double> open;  // ends of the enclosing spans
    for (auto [t0, t1] : v) {
      while (!open.empty() && open.back() <= t0) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(t1, open.back() + 0.002) << "track " << tid << " at " << t0;
      }
      open.push_back(t1);
    }
  }
}

TEST(Trace, RecordsStepsCollectivesTransfersJitAndMemory) {
  Mesh mesh = make_mesh({4}, {"x"});
  MeshScope scope(mesh);
  const std::string path = temp_file("run");
  profiler::start_trace(path);
  EXPECT_TRUE(profiler::is_tracing());
  EXPECT_EQ(profiler::trace_path(), path);
  std::vector<float> host(32);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  Array x = device_put(array(host, {8, 4}), P("x"));
  Array y = exp(x) * 2.0;
  auto f = jit(shard_map([](const Array& b) { return psum(sum(b), "x"); },
                         {.in_specs = P("x"), .out_specs = P()}),
               {.name = "total"});
  Array s1 = f(y);
  Array s2 = f(x);  // same types and layouts: a cache hit
  std::vector<float> got = s2.to_vector<float>();
  profiler::stop_trace();
  EXPECT_FALSE(profiler::is_tracing());
  EXPECT_EQ(got[0], 496.f);

  json j = read_trace(path);
  ASSERT_TRUE(j.at("traceEvents").is_array());
  // Track names: the caller (tid 1) and each device d (tid d + 2).
  std::map<int, std::string> tracks;
  for (const auto& e : events_of(j, "M"))
    if (e.at("name") == "thread_name") tracks[e.at("tid")] = e.at("args").at("name");
  EXPECT_EQ(tracks[1], "caller");
  for (int d = 0; d < static_cast<int>(devices().size()); ++d)
    EXPECT_EQ(tracks[d + 2], "device " + std::to_string(d) + " (cpu)");

  std::vector<json> spans = events_of(j, "X");
  expect_nested(spans);
  int steps = 0, collectives = 0;
  for (const auto& e : spans) {
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    const std::string cat = e.at("cat");
    if (cat == "step") {
      ++steps;
      EXPECT_GE(e.at("tid").get<int>(), 2) << e.dump();
      EXPECT_TRUE(e.at("args").contains("in")) << e.dump();
      EXPECT_GT(e.at("args").at("bytes").get<int64_t>(), 0) << e.dump();
    }
    if (cat == "collective" && e.at("name") == "all_reduce") {
      ++collectives;
      const json& a = e.at("args");
      EXPECT_EQ(a.at("bytes"), 4) << e.dump();  // one f32 per device
      EXPECT_EQ(a.at("group"), "[0,1,2,3]") << e.dump();
      EXPECT_EQ(a.at("axes"), "x") << e.dump();
      EXPECT_GE(a.at("wait_us").get<double>(), 0.0);
      EXPECT_LE(a.at("wait_us").get<double>(), e.at("dur").get<double>() + 1.0) << e.dump();
    }
  }
  // exp, multiply, sum on 4 devices eagerly and in two jit runs, at the least.
  EXPECT_GE(steps, 12);
  EXPECT_EQ(collectives, 8);  // one psum per device per call
  EXPECT_TRUE(has_name(spans, "exp"));
  EXPECT_TRUE(has_name(spans, "host to device"));
  EXPECT_TRUE(has_name(spans, "device to host"));
  EXPECT_TRUE(has_name(spans, "jit total"));
  EXPECT_TRUE(has_name(spans, "jit trace total"));
  EXPECT_TRUE(has_name(spans, "jit compile total"));
  EXPECT_TRUE(has_name(spans, "dispatch"));
  int traces = 0;
  for (const auto& e : spans) traces += e.at("name") == "jit trace total";
  EXPECT_EQ(traces, 1);
  EXPECT_TRUE(has_name(events_of(j, "i"), "jit cache hit total"));
  std::vector<json> counters = events_of(j, "C");
  ASSERT_FALSE(counters.empty());
  EXPECT_TRUE(has_name(counters, "memory device 0"));
  EXPECT_TRUE(counters[0].at("args").contains("live_bytes"));
}

TEST(Trace, ErrorsAndNothingRecordedWhileOff) {
  EXPECT_FALSE(profiler::is_tracing());
  EXPECT_NE(error_of<RuntimeError>([] { profiler::stop_trace(); }).find("[stop_trace] no trace"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([] { profiler::start_trace(""); }).find("[start_trace]"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([] {
              profiler::start_trace("/nonexistent-dir/t.json");
            }).find("cannot create the trace file"),
            std::string::npos);
  EXPECT_FALSE(profiler::is_tracing());
  const std::string path = temp_file("off");
  profiler::start_trace(path);
  EXPECT_NE(error_of<ValueError>([&] { profiler::start_trace(path); }).find("already"),
            std::string::npos);
  profiler::stop_trace();
  // Work done while off leaves nothing in the next file.
  Array z = sin(iota({64})) + 1.0;
  z.block_until_ready();
  profiler::start_trace(path);
  profiler::stop_trace();
  json j = read_trace(path);
  EXPECT_TRUE(events_of(j, "X").empty()) << j.dump();
}

}  // namespace
