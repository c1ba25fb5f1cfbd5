// tsr-train: trains a character-level transformer on simulated devices, data-,
// tensor- and FSDP-parallel, with checkpoints that restore onto another mesh.
// The program is built only on Tessera's public headers (docs/design/0017).
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>

#include <tsr/tsr.h>

#include "data.h"
#include "flags.h"
#include "run.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

}  // namespace

int main(int argc, char** argv) {
  train::Flags f;
  if (auto code = train::parse_flags(argc, argv, f)) return *code;
  std::signal(SIGINT, on_sigint);
  try {
    return train::run(f, &g_interrupted);
  } catch (const train::FlagError& e) {
    std::fprintf(stderr, "tsr-train: %s\n", e.what());
    return 2;
  } catch (const tsr::Error& e) {
    std::fprintf(stderr, "tsr-train: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tsr-train: %s\n", e.what());
    return 1;
  }
}
