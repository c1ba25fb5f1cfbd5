#include "run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <sstream>

#include <tsr/checkpoint.h>
#include <tsr/nn.h>
#include <tsr/optim.h>
#include <tsr/tsr.h>

#include "data.h"
#include "plot.h"
#include "progress.h"
#include "safetensors_dump.h"
#include "sample.h"
#include "step.h"

namespace train {
namespace {

using namespace tsr;
namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) o += (i ? sep : "") + v[i];
  return o;
}

std::string rules_text(const nn::Rules& r) {
  std::vector<std::string> parts;
  for (const auto& [name, axes] : r.table)
    parts.push_back(name + "->" + (axes.empty() ? std::string("-") : join(axes, "+")));
  return join(parts, ", ");
}

// The mesh the flags ask for: axes ("data") or ("data", "model"), Auto as jax's Mesh,
// over the devices of every process (--devices each).
Mesh mesh_from_flags(const Flags& f) {
  int n = std::accumulate(f.mesh_shape.begin(), f.mesh_shape.end(), 1, std::multiplies<int>());
  const int total = device_count();
  if (n != total)
    throw FlagError("--mesh " + f.mesh + " has " + std::to_string(n) + " devices, but there are " +
                    std::to_string(total) +
                    (process_count() > 1
                         ? " (--devices " + std::to_string(f.devices) + " on each of " +
                               std::to_string(process_count()) + " processes)"
                         : " (--devices)") +
                    ". Use a mesh whose sizes multiply to " + std::to_string(total) + ".");
  std::vector<std::string> names{"data", "model"};
  names.resize(f.mesh_shape.size());
  return make_mesh(f.mesh_shape, names, std::vector<AxisType>(names.size(), AxisType::Auto));
}

// Every rule must name axes of the mesh (a typo or a 1-D mesh with tp rules).
void check_rules(const nn::Rules& rules, const Mesh& mesh, const Flags& f) {
  for (const auto& [name, axes] : rules.table)
    for (const auto& a : axes)
      if (std::find(mesh.axis_names().begin(), mesh.axis_names().end(), a) ==
          mesh.axis_names().end())
        throw FlagError("--rules " + f.rules + " maps '" + name + "' to mesh axis '" + a +
                        "', which --mesh " + f.mesh +
                        " lacks (its axes: " + join(mesh.axis_names(), ", ") +
                        "). Use a 2-D mesh such as --mesh 4x2, or --rules dp or fsdp.");
}

int64_t axes_size(const Mesh& mesh, const PartitionSpec& spec, int dim) {
  int64_t n = 1;
  if (dim < spec.size())
    for (const auto& a : spec.entries()[static_cast<size_t>(dim)].axes()) n *= mesh.axis_size(a);
  return n;
}

std::vector<char> host_bytes(const Array& a0) {
  // Across processes a sharded leaf is gathered first (every process calls this).
  Array a = a0.is_fully_addressable() ? a0 : multihost::process_allgather(a0, true);
  std::vector<char> out;
  if (a.dtype() == int32) {
    auto v = a.to_vector<int32_t>();
    out.assign(reinterpret_cast<const char*>(v.data()),
               reinterpret_cast<const char*>(v.data() + v.size()));
  } else {
    auto v = a.astype(float32).to_vector<float>();
    out.assign(reinterpret_cast<const char*>(v.data()),
               reinterpret_cast<const char*>(v.data() + v.size()));
  }
  return out;
}

std::vector<HostTensor> leaves_as_tensors(const nn::Transformer& m, const std::string& prefix) {
  std::vector<HostTensor> out;
  auto paths = tree::paths(m);
  auto leaves = tree::leaves(m);
  for (size_t i = 0; i < leaves.size(); ++i)
    out.push_back({prefix + paths[i], "F32",
                   std::vector<int64_t>(leaves[i].shape().begin(), leaves[i].shape().end()),
                   host_bytes(leaves[i])});
  return out;
}

// Loss history of an earlier run in `out`, up to `step` (a resumed run extends it).
std::vector<LossPoint> read_history(const std::string& csv, int64_t step) {
  std::vector<LossPoint> pts;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    LossPoint p{};
    if (std::sscanf(line.c_str(), "%ld,%lf,%lf", &p.step, &p.loss, &p.tokens_per_s) == 3 &&
        p.step <= step)
      pts.push_back(p);
  }
  return pts;
}

}  // namespace

int run(const Flags& f, volatile std::sig_atomic_t* interrupted) {
  // Under mpirun every process trains with --devices devices of one global mesh; process
  // 0 prints and writes the logs, every process computes (docs/design/0018).
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    distributed::initialize({.local_device_count = f.devices});
  } else {
    init({.num_cpu_devices = f.devices});
  }
  // --trace: the timeline of the whole run, written however run() ends.
  struct TraceFile {
    explicit TraceFile(const std::string& path) {
      if (!path.empty()) profiler::start_trace(path);
    }
    ~TraceFile() {
      try {
        if (profiler::is_tracing()) profiler::stop_trace();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tsr-train: %s\n", e.what());
      }
    }
  } trace_file(f.trace);
  const bool lead = process_index() == 0;
  if (!lead && !std::freopen("/dev/null", "w", stdout)) return 1;
  Mesh mesh = mesh_from_flags(f);
  nn::Rules rules = nn::rules_preset(f.rules);
  check_rules(rules, mesh, f);
  PartitionSpec batch_spec = nn::logical_to_spec({"batch", "seq"}, rules, mesh);
  if (int64_t n = axes_size(mesh, batch_spec, 0); f.batch % (n * f.micro) != 0)
    throw FlagError(
        "--batch " + std::to_string(f.batch) +
        (f.micro > 1 ? " in --micro " + std::to_string(f.micro) + " micro-batches" : "") +
        " does not split over the " + std::to_string(n) + " devices of the batch axes (" +
        join(batch_spec.entries()[0].axes(), "+") + ") of --rules " + f.rules + " on --mesh " +
        f.mesh + ". Use a multiple of " + std::to_string(n * f.micro) + ".");

  Dataset data(f.text, f.text_bytes);
  // The vocabulary padded to a multiple of 16, so a 'vocab' rule splits it over a model
  // axis of 2, 4, 8 or 16 and a checkpoint restores onto any such mesh.
  const int64_t pad = 16;
  int64_t vocab = (data.vocab().size() + pad - 1) / pad * pad;
  nn::TransformerConfig cfg =
      f.model == "small" ? nn::TransformerConfig::small(vocab) : nn::TransformerConfig::tiny(vocab);
  cfg.max_seq = std::max<int64_t>(cfg.max_seq, f.seq);

  MeshScope scope(mesh);
  Array key = random::key(static_cast<int64_t>(f.seed));
  nn::Transformer model;
  try {
    model = nn::shard(nn::Transformer::init(cfg, key), rules, mesh);
  } catch (const ValueError& e) {
    // nn::shard lists every failing leaf; a command line error is one line: the first.
    std::string what = e.what(), first;
    size_t n = 0;
    for (size_t at = what.find("\n  - "); at != std::string::npos; at = what.find("\n  - ", at + 1))
      if (n++ == 0) first = what.substr(at + 5, what.find('\n', at + 1) - at - 5);
    throw FlagError("the model does not split under --rules " + f.rules + " on --mesh " + f.mesh +
                    (n ? ": " + first + (n > 1 ? " (and " + std::to_string(n - 1) + " more)" : "")
                       : ": " + what.substr(0, what.find('\n'))) +
                    ". Choose a mesh whose axes divide the model's sizes, or other --rules.");
  }

  const int64_t warmup = f.warmup > 0 ? f.warmup : std::max<int64_t>(1, f.steps / 20);
  optim::GradientTransformation tx = make_optimizer({.lr = f.lr,
                                                     .warmup = warmup,
                                                     .steps = f.steps,
                                                     .weight_decay = f.weight_decay,
                                                     .clip = f.clip});
  TrainState state = init_state(model, tx);
  int64_t first = 0;
  fs::path root(f.checkpoint);
  if (f.resume) {
    auto latest = ckpt::latest_step(root);
    if (!latest)
      throw FlagError("--resume: no checkpoint in " + f.checkpoint +
                      ". Run once with --checkpoint " + f.checkpoint + " first.");
    state = ckpt::restore(ckpt::step_dir(root, *latest), state);
    first = state.step.item<int32_t>();
    if (first >= f.steps)
      throw FlagError("--resume: the checkpoint is at step " + std::to_string(first) +
                      ", not before --steps " + std::to_string(f.steps) + ". Raise --steps.");
  }

  // What the run is: the mesh, the model, the layout of every weight.
  if (process_count() > 1)
    std::printf("mesh      %s on %d simulated CPU devices (%d processes x %d)\n",
                mesh.str().c_str(), device_count(), process_count(), f.devices);
  else
    std::printf("mesh      %s on %d simulated CPU devices\n", mesh.str().c_str(), f.devices);
  std::printf("rules     %s: %s\n", f.rules.c_str(), rules_text(rules).c_str());
  std::printf(
      "model     %s: %.2f M parameters (d_model %lld, %lld heads, %lld layers, d_ff %lld, "
      "vocab %lld, seq %d)\n",
      f.model.c_str(), static_cast<double>(nn::param_count(model)) / 1e6,
      static_cast<long long>(cfg.d_model), static_cast<long long>(cfg.heads),
      static_cast<long long>(cfg.layers), static_cast<long long>(cfg.d_ff),
      static_cast<long long>(vocab), f.seq);
  std::printf("text      %s: %lld lines, %lld characters, %d distinct; unigram entropy %.3f nats\n",
              f.text.c_str(), static_cast<long long>(data.num_lines()),
              static_cast<long long>(data.num_tokens()), data.vocab().size(),
              data.unigram_entropy());
  std::printf(
      "optimizer AdamW(b1 0.9, b2 0.99, wd %g on matrices), lr %g: warmup %lld then cosine "
      "to %g at step %lld, clip %g; batch %d x %d characters in %d micro-batch(es)\n",
      f.weight_decay, f.lr, static_cast<long long>(warmup), f.lr / 10,
      static_cast<long long>(f.steps), f.clip, f.batch, f.seq, f.micro);
  std::printf("weights   (path, shape, sharding; blocks[1..] as blocks[0])\n");
  auto specs = nn::logical_specs(model, rules, mesh);
  auto leaves = tree::leaves(model);
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& [path, spec] = specs[i];
    if (path.rfind("blocks[", 0) == 0 && path.rfind("blocks[0]", 0) != 0) continue;
    std::printf("          %-28s %-12s %s\n", path.c_str(), shape_str(leaves[i].shape()).c_str(),
                spec.repr().c_str());
  }
  std::printf("%s", visualize(model.blocks[0].mlp.w1.value).c_str());
  if (first > 0)
    std::printf("resumed   at step %lld from %s\n", static_cast<long long>(first),
                f.checkpoint.c_str());

  auto step_fn = make_step(tx, rules, f.micro);

  NamedSharding batch_sharding(mesh, batch_spec);
  auto put = [&](const std::vector<int32_t>& v) {
    return device_put(v, batch_sharding, Shape{f.batch, f.seq});
  };
  const bool dump = !f.dump_reference.empty();
  std::vector<HostTensor> dump_tensors;
  std::vector<int32_t> dump_inputs, dump_targets;
  std::vector<float> dump_losses;
  if (dump) dump_tensors = leaves_as_tensors(state.model, "init/");

  std::string csv = (fs::path(f.out) / "loss.csv").string();
  std::vector<LossPoint> history = first > 0 ? read_history(csv, first) : std::vector<LossPoint>{};
  Progress progress(first, f.steps, f.log_every);
  auto save = [&](int64_t step) {
    if (f.checkpoint.empty()) return;
    ckpt::save_step(root, step, state, 3);
  };
  int64_t pos = state.data_pos.item<int32_t>();
  auto next_batch = std::async(std::launch::async,
                               [&, p = pos] { return data.batch(p, f.batch, f.seq, f.seed); });
  int64_t step = first;
  bool stopped = false;
  while (step < f.steps) {
    HostBatch hb = next_batch.get();
    if (dump) {
      dump_inputs.insert(dump_inputs.end(), hb.inputs.begin(), hb.inputs.end());
      dump_targets.insert(dump_targets.end(), hb.targets.begin(), hb.targets.end());
    }
    auto t0 = std::chrono::steady_clock::now();
    auto [next, loss] = step_fn(state, put(hb.inputs), put(hb.targets));
    state = std::move(next);
    ++pos;
    // Prepare the next batch on the host while the devices run this step.
    next_batch = std::async(std::launch::async,
                            [&, p = pos] { return data.batch(p, f.batch, f.seq, f.seed); });
    double l = loss.item<float>();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++step;
    int64_t peak = 0;
    for (const Device& d : local_devices())
      peak = std::max(peak, memory_stats(d).peak_bytes_in_use);
    double tps = static_cast<double>(f.batch) * f.seq / dt;
    progress.update({step, l, tps, dt, peak});
    history.push_back({static_cast<long>(step), l, tps});
    if (dump) dump_losses.push_back(static_cast<float>(l));
    if (!std::isfinite(l)) {
      progress.finish();
      std::fprintf(stderr, "tsr-train: the loss became %g at step %lld; lower --lr\n", l,
                   static_cast<long long>(step));
      return 1;
    }
    if (*interrupted) {
      stopped = true;
      break;
    }
    if (f.stop_after > 0 && step - first >= f.stop_after && step < f.steps) break;
    if (f.every > 0 && step % f.every == 0 && step < f.steps) save(step);
  }
  progress.finish();
  save(step);
  if (lead) {
    fs::create_directories(f.out);
    write_loss_csv(csv, history);
    write_loss_svg((fs::path(f.out) / "loss.svg").string(), history,
                   "tsr-train: " + f.model + " model, --rules " + f.rules + ", --mesh " + f.mesh,
                   data.unigram_entropy(), "unigram entropy");
  }
  if (step < f.steps && !stopped) {
    std::printf("stopped   after %lld steps at step %lld%s\n", static_cast<long long>(f.stop_after),
                static_cast<long long>(step), f.checkpoint.empty() ? "" : "; resume with --resume");
    return 0;
  }
  if (stopped) {
    std::printf("interrupted at step %lld%s; resume with --resume\n", static_cast<long long>(step),
                f.checkpoint.empty() ? "" : ("; checkpoint in " + f.checkpoint).c_str());
    return 130;
  }
  double tail = 0;
  size_t k = std::min<size_t>(10, history.size());
  for (size_t i = history.size() - k; i < history.size(); ++i) tail += history[i].loss / k;
  std::printf("loss      %.4f (mean of the last %zu steps) vs unigram entropy %.4f nats\n", tail, k,
              data.unigram_entropy());
  std::printf("wrote     %s and %s\n", csv.c_str(),
              (fs::path(f.out) / "loss.svg").string().c_str());

  if (dump) {
    auto fin = leaves_as_tensors(state.model, "final/");
    dump_tensors.insert(dump_tensors.end(), fin.begin(), fin.end());
    auto bytes = [](const auto& v) {
      return std::vector<char>(reinterpret_cast<const char*>(v.data()),
                               reinterpret_cast<const char*>(v.data() + v.size()));
    };
    int64_t S = static_cast<int64_t>(dump_losses.size());
    dump_tensors.push_back({"batch/inputs", "I32", {S, f.batch, f.seq}, bytes(dump_inputs)});
    dump_tensors.push_back({"batch/targets", "I32", {S, f.batch, f.seq}, bytes(dump_targets)});
    dump_tensors.push_back({"losses", "F32", {S}, bytes(dump_losses)});
    auto num = [](double v) {
      char b[40];
      std::snprintf(b, sizeof b, "%.17g", v);
      return std::string(b);
    };
    if (lead)
      write_safetensors(
          f.dump_reference, dump_tensors,
          {{"vocab", std::to_string(cfg.vocab)},
           {"d_model", std::to_string(cfg.d_model)},
           {"heads", std::to_string(cfg.heads)},
           {"layers", std::to_string(cfg.layers)},
           {"d_ff", std::to_string(cfg.d_ff)},
           {"max_seq", std::to_string(cfg.max_seq)},
           {"lr", num(f.lr)},
           {"warmup", std::to_string(warmup)},
           {"steps", std::to_string(f.steps)},
           {"end_lr", num(f.lr / 10)},
           {"b1", "0.9"},
           {"b2", "0.99"},
           {"eps", "1e-8"},
           {"weight_decay", num(f.weight_decay)},
           {"clip", num(f.clip)},
           {"positions", cfg.positions == nn::Positions::Rotary ? "rotary" : "learned"},
           {"mask_value", num(nn::mask_value(float32))},
           {"ln_eps", "1e-05"},
           {"mesh", f.mesh},
           {"rules", f.rules}});
    std::printf("reference %s: initial and final parameters, %lld batches and losses\n",
                f.dump_reference.c_str(), static_cast<long long>(S));
    return 0;
  }
  if (f.samples > 0) {
    std::printf("samples   (temperature %g):", f.temperature);
    const char* sep = " ";
    for (const auto& w :
         sample_words(state.model, data.vocab(), f.samples, f.temperature, f.seed + 1)) {
      std::printf("%s%s", sep, w.c_str());
      sep = ", ";
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace train
