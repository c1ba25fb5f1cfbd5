#include "sample.h"

#include <tsr/tsr.h>

namespace train {

std::vector<std::string> sample_words(const tsr::nn::Transformer& model, const Vocab& vocab,
                                      int count, double temperature, uint64_t seed) {
  using namespace tsr;
  if (count <= 0) return {};
  const int T = static_cast<int>(model.config.max_seq);
  // Next token at position `pos` of every row, drawn from softmax(logits / temperature).
  auto next = jit([temperature](const nn::Transformer& m, const Array& tokens, const Array& pos,
                                const Array& key) {
    Array logits = nn::apply(m, tokens);            // [count, T, V]
    Array at = take(logits, reshape(pos, {1}), 1);  // [count, 1, V]
    return random::categorical(key, reshape(at, {at.shape()[0], at.shape()[2]}) / temperature);
  });
  std::vector<int32_t> buf(static_cast<size_t>(count) * T, 0);  // token 0 is the separator
  std::vector<bool> done(static_cast<size_t>(count), false);
  std::vector<std::vector<int32_t>> words(static_cast<size_t>(count));
  Array key = random::key(static_cast<int64_t>(seed));
  for (int pos = 0; pos + 1 < T; ++pos) {
    auto keys = random::split_keys(key);
    key = keys[0];
    auto ids =
        next(model, array(buf, {count, T}), scalar<int32_t>(pos), keys[1]).to_vector<int32_t>();
    bool all = true;
    for (int r = 0; r < count; ++r) {
      buf[static_cast<size_t>(r) * T + pos + 1] = ids[static_cast<size_t>(r)];
      if (done[static_cast<size_t>(r)]) continue;
      if (ids[static_cast<size_t>(r)] == 0)
        done[static_cast<size_t>(r)] = true;
      else
        words[static_cast<size_t>(r)].push_back(ids[static_cast<size_t>(r)]);
      all = all && done[static_cast<size_t>(r)];
    }
    if (all) break;
  }
  std::vector<std::string> out;
  for (const auto& w : words) out.push_back(vocab.decode(w));
  return out;
}

}  // namespace train
