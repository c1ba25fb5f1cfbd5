// Every test binary runs on 8 simulated CPU devices.
#include <gtest/gtest.h>

#include <tsr/tsr.h>

namespace {
struct TsrEnvironment : ::testing::Environment {
  void SetUp() override { tsr::init({.num_cpu_devices = 8}); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TsrEnvironment);
}  // namespace
