// tsr-train: trains a character-level transformer on simulated devices.
// (Work in progress: flags and data; the model, optimizer and checkpoints follow.)
#include <cstdio>
#include <exception>

#include <tsr/tsr.h>

#include "data.h"
#include "flags.h"

int main(int argc, char** argv) {
  train::Flags f;
  if (auto code = train::parse_flags(argc, argv, f)) return *code;
  try {
    train::Dataset data(f.text, f.text_bytes);
    std::printf("text      %s: %lld lines, %lld characters, vocabulary %d, unigram entropy %.3f nats\n",
                f.text.c_str(), static_cast<long long>(data.num_lines()),
                static_cast<long long>(data.num_tokens()), data.vocab().size(),
                data.unigram_entropy());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tsr-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
