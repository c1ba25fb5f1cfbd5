#pragma once
// tsr-train's command line: parsed with CLI11, then checked as a whole so that a bad
// combination (an indivisible mesh, a rule naming a missing axis, a batch that does
// not split) is one line before any work starts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace train {

/** Every setting of a run. */
struct Flags {
  int devices = 8;             /**< simulated CPU devices */
  std::string mesh = "4x2";    /**< mesh shape: "8", "4x2" */
  std::string rules = "dp+tp"; /**< rules preset: dp | tp | fsdp | dp+tp | fsdp+tp */
  std::string model = "tiny";  /**< tiny (~1 M parameters) | small (~10 M) */
  int64_t steps = 300;         /**< optimizer steps to reach (total, counting resumed ones) */
  int batch = 32;              /**< sequences per step (global) */
  int micro = 1;               /**< micro-batches the step accumulates gradients over */
  int seq = 64;                /**< characters per sequence */
  double lr = 3e-3;            /**< peak learning rate (warmup + cosine) */
  int warmup = 0;              /**< warmup steps (0: steps / 20) */
  double weight_decay = 0.1;   /**< AdamW decoupled weight decay (matrices only) */
  double clip = 1.0;           /**< global-norm gradient clipping (0: off) */
  std::string text = "/usr/share/dict/words"; /**< training text */
  int64_t text_bytes = 0;                     /**< read at most this many bytes of text (0: all) */
  std::string checkpoint;                     /**< checkpoint directory ("" = none) */
  int64_t every = 0;                          /**< checkpoint every K steps (0: only at the end) */
  bool resume = false;                        /**< resume from --checkpoint */
  int64_t stop_after = 0;      /**< stop (and checkpoint) after this many steps of this run */
  uint64_t seed = 0;           /**< parameter init, data order and sampling */
  int log_every = 10;          /**< log line interval when not on a terminal */
  std::string out = ".";       /**< where loss.csv and loss.svg go */
  int samples = 8;             /**< words generated at the end */
  double temperature = 0.8;    /**< sampling temperature */
  std::string dump_reference;  /**< write init params + batches for the JAX check, then exit */
  std::string trace;           /**< write a Chrome/Perfetto timeline of the run here */
  std::vector<int> mesh_shape; /**< parsed from mesh */
};

/** Parses argv. Returns the exit code to stop with (0 for --help) when the program
 *  should not go on; errors are printed as one line to stderr. */
std::optional<int> parse_flags(int argc, char** argv, Flags& f);

/** "4x2" -> {4, 2}; throws std::invalid_argument with a one-line reason. */
std::vector<int> parse_mesh_shape(const std::string& s);

}  // namespace train
