#!/usr/bin/env bash
# Configures and builds Tessera in build/ (or $TSR_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TSR_BUILD_DIR:-$root/build}"
jobs="${TSR_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${TSR_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
cmake --build "$build" -j "$jobs" ${TSR_TARGET:+--target $TSR_TARGET}
