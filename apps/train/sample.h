#pragma once
// Generating words from a trained model: autoregressive sampling with temperature.
#include <cstdint>
#include <string>
#include <vector>

#include <tsr/nn.h>

#include "data.h"

namespace train {

/** `count` words sampled in one batch: each starts after the separator token and
 *  stops at the next one (or after max_seq - 1 characters). One jit of the model over
 *  a fixed [count, max_seq] window (causal, so later positions never matter) serves
 *  every position. */
std::vector<std::string> sample_words(const tsr::nn::Transformer& model, const Vocab& vocab,
                                      int count, double temperature, uint64_t seed);

}  // namespace train
