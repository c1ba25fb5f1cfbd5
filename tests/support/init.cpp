// Every test binary runs on 8 simulated CPU devices: in one process, or, launched by
// mpirun with N processes, 8 / N devices in each (so every 8-device mesh spans them).
// With a GPU (or TSR_TEST_FAKE_ACCELERATOR=1: the fake accelerator) the default
// platform is CUDA, split into 8 virtual devices unless TSR_CUDA_VIRTUAL_DEVICES says.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <tsr/distributed.h>
#include <tsr/tsr.h>

#include "support/fake_accelerator.h"

namespace {
struct TsrEnvironment : ::testing::Environment {
  void SetUp() override {
    const char* np = std::getenv("OMPI_COMM_WORLD_SIZE");
    const char* fake = std::getenv("TSR_TEST_FAKE_ACCELERATOR");
    if (fake && std::string(fake) == "1") tsr::testing::install_fake_accelerator();
    setenv("TSR_CUDA_VIRTUAL_DEVICES", "8", /*overwrite=*/0);
    if (!np) {
      tsr::init({.num_cpu_devices = 8});
      return;
    }
    tsr::distributed::initialize({.local_device_count = 8 / std::stoi(np)});
    // Process 0 prints every test; the others only their failures.
    if (tsr::process_index() != 0) GTEST_FLAG_SET(brief, true);
  }
  // Work still queued (tests that discard results) finishes before exit: oneDNN's
  // statics are destroyed by exit while a device may still be in a convolution.
  void TearDown() override {
    tsr::synchronize();
    tsr::distributed::shutdown();
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TsrEnvironment);
}  // namespace
