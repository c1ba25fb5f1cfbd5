#pragma once
// The character dataset tsr-train learns from: every line of a text file is one
// example ("word"), characters are tokens, and training windows are fixed-length
// slices of the line stream in a deterministic order from the seed.
#include <cstdint>
#include <string>
#include <vector>

namespace train {

/** Characters as tokens. Token 0 is the separator that ends every line ('\n'); the
 *  others are the file's distinct bytes in byte order. */
struct Vocab {
  std::vector<unsigned char> chars; /**< token id -> byte; chars[0] == '\n' */
  int id[256];                      /**< byte -> token id, -1 when absent */
  /** Number of tokens. */
  int size() const { return static_cast<int>(chars.size()); }
  /** Bytes to tokens; a byte outside the vocabulary is skipped. */
  std::vector<int32_t> encode(const std::string& s) const;
  /** Tokens to text. */
  std::string decode(const std::vector<int32_t>& ids) const;
};

/** One batch of next-token prediction: inputs[b, t] predicts targets[b, t]. */
struct HostBatch {
  std::vector<int32_t> inputs;  /**< [batch, seq], row-major */
  std::vector<int32_t> targets; /**< [batch, seq]: inputs shifted left by one */
};

/** The token stream of a text file and a seeded, resumable order of windows. */
class Dataset {
 public:
  /** Reads `path` (each non-empty line becomes chars + '\n'); at most `max_bytes`
   *  bytes are kept (0: all). Throws std::runtime_error naming the file when it
   *  cannot be read or holds no text. */
  Dataset(const std::string& path, int64_t max_bytes = 0);
  /** The vocabulary. */
  const Vocab& vocab() const { return vocab_; }
  /** Number of tokens in the stream. */
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }
  /** Number of lines read. */
  int64_t num_lines() const { return lines_; }
  /** Entropy in nats of the stream's unigram (character frequency) distribution: the
   *  loss a model that ignores context can reach. */
  double unigram_entropy() const;
  /** The windows of length seq + 1 in the stream (non-overlapping, in order). */
  int64_t num_windows(int seq) const;
  /** The `position`-th batch of the run: windows are visited in an order shuffled from
   *  `seed`, reshuffled each epoch, so a run resumed at `position` sees what the
   *  uninterrupted run would have seen. */
  HostBatch batch(int64_t position, int batch, int seq, uint64_t seed) const;
  /** Lines of the text (without '\n'), for sampling prompts and checks. */
  const std::vector<std::string>& sample_lines() const { return samples_; }

 private:
  Vocab vocab_;
  std::vector<int32_t> tokens_;
  std::vector<std::string> samples_;
  int64_t lines_ = 0;
};

}  // namespace train
