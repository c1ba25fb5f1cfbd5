#pragma once
// The group for ranks that are accelerator devices of this process (virtual devices
// of one GPU, or GPUs of one machine): the ranks meet on the host, then each moves
// device memory on its own stream with the platform's copies and reduce kernel.
#include <cstdint>
#include <memory>
#include <vector>

#include "tsr/comm/group.h"
#include "tsr/runtime/accelerator.h"

namespace tsr::detail {

/** One rank of a device group: its device's memory and stream, and its physical
 *  device (ranks on different ones stage a peer's data before reducing it). */
struct DeviceRank {
  DeviceMemory mem; /**< the device's copies, on its stream */
  int gpu = 0;      /**< physical device index */
};

/** A group over accelerator devices (their ops must have copy2d and reduce). A rank
 *  that waits longer than `timeout_ms` raises CommError (0: TSR_COMM_TIMEOUT_MS). */
std::shared_ptr<GroupImpl> make_device_group(std::vector<DeviceRank> ranks, int64_t timeout_ms = 0);

/** `inner` (a host group) for ranks of which some are accelerator devices: those
 *  ranks' buffers are copied to host memory around each call (mems[r].host() ranks
 *  pass theirs through). Correct, not fast: for groups that mix platforms. */
std::shared_ptr<GroupImpl> make_staged_group(std::shared_ptr<GroupImpl> inner,
                                             std::vector<DeviceMemory> mems);

}  // namespace tsr::detail
