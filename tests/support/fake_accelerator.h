#pragma once
// A fake accelerator for the runtime's accelerator path on machines without a GPU:
// host memory handed out at addresses the host cannot dereference (so a host access
// that bypasses DeviceMemory crashes), and the CPU kernels behind its kernel table.

namespace tsr::detail {
struct AcceleratorOps;
/** The fake's ops (also usable on plain host pointers, which untag to themselves).
 *  Outside tsr::testing, so tests inside tsr:: can declare it without that namespace
 *  hiding gtest's ::testing. */
const AcceleratorOps* fake_accelerator_ops();
}  // namespace tsr::detail

namespace tsr::testing {

/** Installs the fake as the CUDA platform with `gpus` physical devices (call before the
 *  runtime starts; TSR_CUDA_VIRTUAL_DEVICES splits each as on a real GPU). */
void install_fake_accelerator(int gpus = 1);
/** Bytes the fake holds now (its allocations not yet freed). */
long long fake_accelerator_bytes();

}  // namespace tsr::testing
