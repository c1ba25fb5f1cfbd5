// Training throughput of tsr-train's step (apps/train/step.h: jit of value_and_grad of
// the nn Transformer's loss + clip + AdamW, state donated) on the `small` model, per
// mesh and rules table, with each device's peak memory. The JAX and PyTorch steps of
// the same model are bench/train_jax.py and bench/train_torch.py; bench/train_compare.py
// runs all three and prints the in-run ratios (docs/PERFORMANCE.md, "Transformer
// training step").
//
//   build/bench/train_bench [--configs
//   gemm,1:1:dp,8:8:dp,8:8:fsdp,8:4x2:tp,8:4x2:dp+tp,8:4x2:fsdp+tp]
//       [--model small] [--vocab 80] [--batch 16] [--seq 64] [--warmup 3] [--steps 5] [--reps 3]
//
// A config is devices:mesh:rules; the mesh has axes ("data") or ("data", "model"), Auto,
// as tsr-train builds it. Each config: the model laid out by nn::shard, the batch by
// logical_to_spec({"batch", "seq"}), one fixed random batch; `warmup` untimed steps (the
// first traces and lowers), then `reps` repetitions of `steps` steps, each step timed to
// synchronize() (all devices idle, so the whole update is in). The figure is the median
// over repetitions of each repetition's median step. Peak memory is
// memory_stats(d).peak_bytes_in_use from just after the state is built (reset there),
// the largest over the mesh's devices. Each config prints a human line and a
// "RESULT {json}" line for the driver. Config "gemm" times the step's GEMMs alone as
// direct OpenBLAS calls with 2 threads (forward, both gradients of every product,
// attention as one GEMM per batch and head): what a step costs here at this BLAS's speed
// with no other work.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tsr/nn.h>
#include <tsr/tsr.h>

#include "openblas_calls.h"
#include "step.h"

using namespace tsr;

namespace {

struct Options {
  std::string configs = "1:1:dp,8:8:dp,8:8:fsdp,8:4x2:tp,8:4x2:dp+tp,8:4x2:fsdp+tp";
  std::string model = "small";
  int64_t vocab = 80, batch = 16, seq = 64;
  int warmup = 3, steps = 5, reps = 3;
  std::string trace;  // --trace FILE: each rep also runs its steps traced (overhead)
};

struct Config {
  int devices;
  std::vector<int> mesh;
  std::string rules;
  std::string text;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "train_bench: %s\nusage: train_bench [--configs D:MESH:RULES,...] [--model small|tiny]"
      " [--vocab N] [--batch N] [--seq N] [--warmup N] [--steps N] [--reps N]"
      " [--trace FILE]\n",
      why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    if (auto eq = a.find('='); eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      usage(a + " needs a value");
    }
    if (a == "--configs")
      o.configs = v;
    else if (a == "--model")
      o.model = v;
    else if (a == "--vocab")
      o.vocab = std::stoll(v);
    else if (a == "--batch")
      o.batch = std::stoll(v);
    else if (a == "--seq")
      o.seq = std::stoll(v);
    else if (a == "--warmup")
      o.warmup = std::stoi(v);
    else if (a == "--steps")
      o.steps = std::stoi(v);
    else if (a == "--reps")
      o.reps = std::stoi(v);
    else if (a == "--trace")
      o.trace = v;
    else
      usage("unknown flag " + a);
  }
  if (o.model != "small" && o.model != "tiny") usage("--model is small or tiny");
  if (o.warmup < 1 || o.steps < 1 || o.reps < 1) usage("--warmup, --steps, --reps must be >= 1");
  return o;
}

std::vector<Config> parse_configs(const std::string& s) {
  std::vector<Config> out;
  for (const std::string& c : split(s, ',')) {
    if (c == "gemm") {
      out.push_back({1, {1}, "", c});
      continue;
    }
    auto parts = split(c, ':');
    if (parts.size() != 3) usage("config '" + c + "' is not devices:mesh:rules");
    Config k{std::stoi(parts[0]), {}, parts[2], c};
    int n = 1;
    for (const std::string& d : split(parts[1], 'x')) {
      k.mesh.push_back(std::stoi(d));
      n *= k.mesh.back();
    }
    if (n != k.devices || k.mesh.empty() || k.mesh.size() > 2)
      usage("config '" + c +
            "': the mesh must have 1 or 2 axes whose sizes multiply to the devices");
    out.push_back(k);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The largest of a counter over the mesh's devices.
template <class F>
int64_t max_over(const Mesh& mesh, F f) {
  int64_t m = 0;
  for (const Device& d : mesh.devices()) m = std::max(m, f(memory_stats(d)));
  return m;
}

// One row-major GEMM C[m, n] = op(A) op(B) with k the contracted size.
struct Gemm {
  int m, n, k;
  bool ta, tb;
  int count;  // repeats (attention: batch x heads)
};

void run_gemm_floor(const Options& o) {
  nn::TransformerConfig cfg = o.model == "small" ? nn::TransformerConfig::small(o.vocab)
                                                 : nn::TransformerConfig::tiny(o.vocab);
  const int t = static_cast<int>(o.batch * o.seq), e = static_cast<int>(cfg.d_model),
            f = static_cast<int>(cfg.d_ff), v = static_cast<int>(cfg.vocab),
            s = static_cast<int>(o.seq), d = static_cast<int>(cfg.d_model / cfg.heads),
            bh = static_cast<int>(o.batch * cfg.heads);
  // Forward products x[m, k] @ w[k, n]; each adds dx = dy w^T and dw = x^T dy.
  std::vector<Gemm> fwd;
  for (int l = 0; l < cfg.layers; ++l) {
    for (int i = 0; i < 4; ++i) fwd.push_back({t, e, e, false, false, 1});  // q, k, v, o
    fwd.push_back({t, f, e, false, false, 1});                              // w1
    fwd.push_back({t, e, f, false, false, 1});                              // w2
    fwd.push_back({s, s, d, false, true, bh});                              // q k^T
    fwd.push_back({s, d, s, false, false, bh});                             // p v
  }
  fwd.push_back({t, v, e, false, false, 1});  // head
  std::vector<Gemm> all = fwd;
  for (const Gemm& g : fwd) {
    all.push_back({g.m, g.k, g.n, false, true, g.count});  // dx = dy w^T
    all.push_back({g.k, g.n, g.m, true, false, g.count});  // dw = x^T dy
  }
  double flops = 0;
  size_t big = 0;
  for (const Gemm& g : all) {
    flops += 2.0 * g.m * g.n * g.k * g.count;
    big = std::max(big, static_cast<size_t>(std::max({g.m * g.k, g.k * g.n, g.m * g.n})));
  }
  std::vector<float> a(big, 0.01f), b(big, 0.02f), c(big);
  openblas_set_num_threads(2);
  constexpr int R = 101, N = 111, T = 112;
  auto once = [&] {
    for (const Gemm& g : all)
      for (int i = 0; i < g.count; ++i)
        cblas_sgemm(R, g.ta ? T : N, g.tb ? T : N, g.m, g.n, g.k, 1.f, a.data(), g.ta ? g.m : g.k,
                    b.data(), g.tb ? g.k : g.n, 0.f, c.data(), g.n);
  };
  for (int i = 0; i < o.warmup; ++i) once();
  std::vector<double> rep_medians;
  for (int r = 0; r < o.reps; ++r) {
    std::vector<double> times;
    for (int i = 0; i < o.steps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      once();
      times.push_back(seconds_since(t0));
    }
    rep_medians.push_back(median(times));
  }
  const double med = median(rep_medians);
  const double tokens = static_cast<double>(t);
  std::string reps_text;
  for (double m : rep_medians)
    reps_text += (reps_text.empty() ? "" : ",") + std::to_string(m * 1e3);
  std::printf("%-14s %8.1f ms/step %9.0f tokens/s  %zu GEMM calls, %.1f GFLOP, %.0f GFLOP/s\n",
              "gemm", med * 1e3, tokens / med, all.size(), flops / 1e9, flops / med / 1e9);
  std::printf(
      "RESULT {\"impl\": \"OpenBLAS GEMMs alone\", \"config\": \"gemm\", \"devices\": 1, "
      "\"ms_per_step\": %.3f, \"tokens_per_s\": %.1f, \"rep_ms\": [%s], \"gflop\": %.3f}\n",
      med * 1e3, tokens / med, reps_text.c_str(), flops / 1e9);
  std::fflush(stdout);
}

void run_config(const Config& c, const Options& o) {
  std::vector<std::string> names{"data", "model"};
  names.resize(c.mesh.size());
  Mesh mesh = make_mesh(c.mesh, names, std::vector<AxisType>(names.size(), AxisType::Auto));
  nn::Rules rules = nn::rules_preset(c.rules);
  MeshScope scope(mesh);
  nn::TransformerConfig cfg = o.model == "small" ? nn::TransformerConfig::small(o.vocab)
                                                 : nn::TransformerConfig::tiny(o.vocab);
  cfg.max_seq = std::max(cfg.max_seq, o.seq);

  synchronize();
  const int64_t in_use_before = max_over(mesh, [](const MemoryStats& s) { return s.bytes_in_use; });
  nn::Transformer model = nn::shard(nn::Transformer::init(cfg, random::key(0)), rules, mesh);
  // Schedule lengths do not change the work of a step; these match train_torch/jax.py.
  optim::GradientTransformation tx =
      train::make_optimizer({.lr = 3e-3, .warmup = 10, .steps = 1000});
  train::TrainState state = train::init_state(model, tx);
  model = {};
  int64_t replicated = 0;  // params + optimizer state at full size (one replicated copy)
  for (const Array& a : tree::leaves(state)) replicated += a.nbytes();

  std::mt19937 gen(1234);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(o.vocab - 1));
  std::vector<int32_t> xs(static_cast<size_t>(o.batch * o.seq)), ys(xs.size());
  for (auto& v : xs) v = tok(gen);
  for (auto& v : ys) v = tok(gen);
  NamedSharding batch(mesh, nn::logical_to_spec({"batch", "seq"}, rules, mesh));
  Array x = device_put(xs, batch, Shape{o.batch, o.seq});
  Array y = device_put(ys, batch, Shape{o.batch, o.seq});
  synchronize();
  const int64_t state_bytes =
      max_over(mesh, [](const MemoryStats& s) { return s.bytes_in_use; }) - in_use_before;
  for (const Device& d : mesh.devices()) reset_peak_memory_stats(d);

  auto step = train::make_step(tx, rules);
  float loss = 0;
  auto one = [&] {
    auto [next, l] = step(state, x, y);
    state = std::move(next);
    synchronize();
    return l;
  };
  auto t0 = std::chrono::steady_clock::now();
  float first_loss = one().item<float>();
  const double first = seconds_since(t0);
  for (int i = 1; i < o.warmup; ++i) one();
  std::vector<double> rep_medians, traced_medians;
  auto timed_steps = [&] {
    std::vector<double> t;
    for (int i = 0; i < o.steps; ++i) {
      auto s0 = std::chrono::steady_clock::now();
      Array l = one();
      t.push_back(seconds_since(s0));
      if (i + 1 == o.steps) loss = l.item<float>();
    }
    return median(t);
  };
  for (int r = 0; r < o.reps; ++r) {
    rep_medians.push_back(timed_steps());
    if (o.trace.empty()) continue;
    // The same steps recorded (the file is written after them, untimed).
    profiler::start_trace(o.trace);
    traced_medians.push_back(timed_steps());
    profiler::stop_trace();
  }
  if (!o.trace.empty()) {
    double ratio = 0;
    std::vector<double> ratios;
    for (size_t r = 0; r < rep_medians.size(); ++r)
      ratios.push_back(traced_medians[r] / rep_medians[r]);
    ratio = median(ratios);
    std::printf(
        "%-14s trace on %8.1f ms/step, off %8.1f ms/step: on/off %.3f (median of %zu "
        "in-rep ratios)\n",
        c.text.c_str(), median(traced_medians) * 1e3, median(rep_medians) * 1e3, ratio,
        ratios.size());
  }
  const double med = median(rep_medians);
  const int64_t peak =
      max_over(mesh, [](const MemoryStats& s) { return s.peak_bytes_in_use; }) - in_use_before;
  const double tokens = static_cast<double>(o.batch * o.seq);
  const double mib = 1024.0 * 1024.0;
  std::string reps_text;
  for (double m : rep_medians)
    reps_text += (reps_text.empty() ? "" : ",") + std::to_string(m * 1e3);
  std::printf(
      "%-14s %8.1f ms/step %9.0f tokens/s  state %6.1f MiB/device  peak %6.1f MiB/device"
      "  (replicated params+opt %.1f MiB)  first call %.2f s  loss %.4f -> %.4f\n",
      c.text.c_str(), med * 1e3, tokens / med, state_bytes / mib, peak / mib, replicated / mib,
      first, first_loss, loss);
  std::printf(
      "RESULT {\"impl\": \"tessera\", \"config\": \"%s\", \"devices\": %d, \"rules\": \"%s\", "
      "\"ms_per_step\": %.3f, \"tokens_per_s\": %.1f, \"rep_ms\": [%s], "
      "\"state_bytes_per_device\": %lld, \"peak_bytes_per_device\": %lld, "
      "\"replicated_state_bytes\": %lld, \"params\": %lld, \"first_call_s\": %.3f, "
      "\"loss\": %.5f}\n",
      c.text.c_str(), c.devices, c.rules.c_str(), med * 1e3, tokens / med, reps_text.c_str(),
      static_cast<long long>(state_bytes), static_cast<long long>(peak),
      static_cast<long long>(replicated), static_cast<long long>(nn::param_count(state.model)),
      first, loss);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::vector<Config> configs = parse_configs(o.configs);
  int devices = 1;
  for (const Config& c : configs) devices = std::max(devices, c.devices);
  tsr::init({.num_cpu_devices = devices});
  std::printf(
      "train_bench: %s model, vocab %lld, batch %lld x seq %lld; %d warm-up steps, "
      "%d reps x %d steps; %d simulated devices\n",
      o.model.c_str(), static_cast<long long>(o.vocab), static_cast<long long>(o.batch),
      static_cast<long long>(o.seq), o.warmup, o.reps, o.steps, devices);
  for (const Config& c : configs) {
    if (c.text == "gemm") {
      run_gemm_floor(o);
      continue;
    }
    run_config(c, o);
    // Each config starts from empty caches: its peak is its own.
    clear_caches();
  }
  return 0;
}
