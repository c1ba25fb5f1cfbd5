#!/usr/bin/env bash
# Configures and builds Tessera in build/ (or $TSR_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TSR_BUILD_DIR:-$root/build}"
jobs="${TSR_JOBS:-$(nproc)}"
# CUDA code compiles to PTX for sm_90 only unless TSR_CUDA_ARCHITECTURES says otherwise:
# on machines without a GPU (CI) this checks the CUDA code at a third of the cost of
# the library default (sm_80, sm_90 and PTX); scripts/gpu_check.sh builds "native".
cuda_archs="${TSR_CUDA_ARCHITECTURES:-90-virtual}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${TSR_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_CUDA_ARCHITECTURES="$cuda_archs" "$@" >/dev/null
cmake --build "$build" -j "$jobs" ${TSR_TARGET:+--target $TSR_TARGET}
