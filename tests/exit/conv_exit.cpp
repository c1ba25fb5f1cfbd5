// Returns from main with convolutions of new shapes still queued on the devices: the
// exit drains them before oneDNN's statics are destroyed (design 0022 §5). Before that
// drain, about two runs in three crashed in oneDNN at exit. ctest runs it 10 times.
#include <tsr/conv.h>
#include <tsr/tsr.h>

int main() {
  using namespace tsr;
  init({.num_cpu_devices = 8});
  for (int i = 1; i < 30; ++i) {
    Array x = random::normal(random::key(i), {2, 6 + i, 5 + i, 3});
    Array w = random::normal(random::key(1), {3, 3, 3, 4});
    (void)conv_general_dilated(x, w, {1, 1}, "SAME",
                               {.dimension_numbers = {"NHWC", "HWIO", "NHWC"}});
  }
  return 0;
}
