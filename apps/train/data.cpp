#include "data.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>

namespace train {

std::vector<int32_t> Vocab::encode(const std::string& s) const {
  std::vector<int32_t> out;
  out.reserve(s.size());
  for (unsigned char c : s)
    if (id[c] >= 0) out.push_back(id[c]);
  return out;
}

std::string Vocab::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t t : ids)
    if (t >= 0 && t < size()) out.push_back(static_cast<char>(chars[static_cast<size_t>(t)]));
  return out;
}

Dataset::Dataset(const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the text file '" + path + "'");
  std::string text, line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (max_bytes > 0 && static_cast<int64_t>(text.size() + line.size() + 1) > max_bytes) break;
    text += line;
    text += '\n';
    ++lines_;
    if (samples_.size() < 4096) samples_.push_back(line);
  }
  if (text.empty()) throw std::runtime_error("the text file '" + path + "' holds no text");
  bool seen[256] = {};
  for (unsigned char c : text) seen[c] = true;
  std::fill(std::begin(vocab_.id), std::end(vocab_.id), -1);
  vocab_.chars.push_back('\n');
  vocab_.id[static_cast<unsigned char>('\n')] = 0;
  for (int c = 0; c < 256; ++c)
    if (seen[c] && c != '\n') {
      vocab_.id[c] = vocab_.size();
      vocab_.chars.push_back(static_cast<unsigned char>(c));
    }
  tokens_ = vocab_.encode(text);
}

double Dataset::unigram_entropy() const {
  std::vector<double> count(static_cast<size_t>(vocab_.size()), 0.0);
  for (int32_t t : tokens_) count[static_cast<size_t>(t)] += 1;
  double n = static_cast<double>(tokens_.size()), h = 0;
  for (double c : count)
    if (c > 0) h -= c / n * std::log(c / n);
  return h;
}

int64_t Dataset::num_windows(int seq) const { return (num_tokens() - 1) / seq; }

HostBatch Dataset::batch(int64_t position, int batch, int seq, uint64_t seed) const {
  const int64_t n = num_windows(seq);
  if (n < 1) throw std::runtime_error("the text is shorter than one sequence");
  HostBatch out;
  out.inputs.resize(static_cast<size_t>(batch) * seq);
  out.targets.resize(out.inputs.size());
  // Window k of the run lives in epoch k / n at slot k % n of that epoch's shuffle;
  // the shuffle is recomputed from (seed, epoch) so any position can be resumed.
  std::vector<int64_t> order;
  int64_t order_epoch = -1;
  for (int b = 0; b < batch; ++b) {
    int64_t k = position * batch + b, epoch = k / n;
    if (epoch != order_epoch) {
      order.resize(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch));
      for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates: identical on every libstdc++
        std::swap(order[static_cast<size_t>(i)],
                  order[static_cast<size_t>(rng() % static_cast<uint64_t>(i + 1))]);
      order_epoch = epoch;
    }
    int64_t start = order[static_cast<size_t>(k % n)] * seq;
    for (int t = 0; t < seq; ++t) {
      out.inputs[static_cast<size_t>(b) * seq + t] = tokens_[static_cast<size_t>(start + t)];
      out.targets[static_cast<size_t>(b) * seq + t] = tokens_[static_cast<size_t>(start + t + 1)];
    }
  }
  return out;
}

}  // namespace train
