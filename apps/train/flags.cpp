#include "flags.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <stdexcept>

namespace train {

std::vector<int> parse_mesh_shape(const std::string& s) {
  std::vector<int> shape;
  std::vector<std::string> parts{""};
  for (char c : s) {
    if (c == 'x')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  for (const std::string& part : parts) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 1)
      throw std::invalid_argument("--mesh '" + s +
                                  "' is not a mesh shape; expected sizes joined by 'x', "
                                  "e.g. 8 or 4x2");
    shape.push_back(v);
  }
  if (shape.empty() || shape.size() > 2)
    throw std::invalid_argument("--mesh '" + s + "' has " + std::to_string(shape.size()) +
                                " axes; expected 1 (data) or 2 (data x model), e.g. 8 or 4x2");
  return shape;
}

std::optional<int> parse_flags(int argc, char** argv, Flags& f) {
  CLI::App app{
      "tsr-train: trains a character-level transformer on simulated devices, "
      "data-, tensor- and FSDP-parallel."};
  app.add_option("--devices", f.devices, "simulated CPU devices")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--mesh", f.mesh, "mesh shape: data or data x model, e.g. 8 or 4x2")
      ->capture_default_str();
  app.add_option("--rules", f.rules, "logical-axis rules")
      ->check(CLI::IsMember({"dp", "tp", "fsdp", "dp+tp", "fsdp+tp"}))
      ->capture_default_str();
  app.add_option("--model", f.model, "model size: tiny (~1 M params) or small (~10 M)")
      ->check(CLI::IsMember({"tiny", "small"}))
      ->capture_default_str();
  app.add_option("--steps", f.steps, "optimizer steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", f.batch, "global batch (sequences per step)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--micro", f.micro,
                 "accumulate each step's gradient over this many micro-batches (less memory)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seq", f.seq, "characters per sequence")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  app.add_option("--lr", f.lr, "peak learning rate (AdamW, warmup + cosine decay)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", f.warmup, "warmup steps (0: steps/20)")->check(CLI::NonNegativeNumber);
  app.add_option("--weight-decay", f.weight_decay, "AdamW weight decay on matrices")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--clip", f.clip, "global-norm gradient clipping (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--text", f.text, "text file: each line is one example")->capture_default_str();
  app.add_option("--text-bytes", f.text_bytes, "read at most this many bytes (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint", f.checkpoint, "checkpoint directory");
  app.add_option("--every", f.every, "checkpoint every K steps (0: at the end only)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", f.resume, "resume from the latest checkpoint in --checkpoint");
  app.add_option("--stop-after", f.stop_after,
                 "train at most this many steps in this invocation, checkpoint, and exit "
                 "(time-limited jobs; resume with --resume)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", f.seed, "seed of init, data order and sampling")->capture_default_str();
  app.add_option("--log-every", f.log_every, "log interval when stdout is not a terminal")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--out", f.out, "folder for loss.csv and loss.svg")->capture_default_str();
  app.add_option("--samples", f.samples, "words to sample at the end")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--temperature", f.temperature, "sampling temperature")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dump-reference", f.dump_reference,
                 "write the initial parameters and the run's batches to FILE (safetensors) "
                 "for tests/reference/train, then exit");
  app.add_option("--trace", f.trace,
                 "write a timeline of the run to FILE (Chrome trace events: open it in "
                 "ui.perfetto.dev); the same as TSR_TRACE=FILE");
  try {
    app.parse(argc, argv);
    f.mesh_shape = parse_mesh_shape(f.mesh);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::cerr << "tsr-train: " << what << " (see --help)\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tsr-train: " << e.what() << "\n";
    return 2;
  }
  if (f.resume && f.checkpoint.empty()) {
    std::cerr << "tsr-train: --resume needs --checkpoint DIR\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace train
