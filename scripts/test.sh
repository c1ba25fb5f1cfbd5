#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Sanitizers: TSR_SANITIZE=address,undefined scripts/test.sh (uses build-sanitize/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
args=(-DTSR_BUILD_TESTS=ON -DTSR_BUILD_BENCHMARKS=ON -DTSR_BUILD_EXAMPLES=ON)
if [ -n "${TSR_SANITIZE:-}" ]; then
  export TSR_BUILD_DIR="${TSR_BUILD_DIR:-$root/build-sanitize}"
  args+=("-DTSR_SANITIZE=$TSR_SANITIZE")
fi
bash "$root/scripts/build.sh" "${args[@]}"
# JAX for the reference check (tests/reference/), from PyPI into a venv; without it
# (no network) ctest reports reference_vs_jax as skipped.
bash "$root/tests/reference/setup_venv.sh" ||
  echo "test.sh: could not install JAX; the reference check will be skipped" >&2
build="${TSR_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "${TSR_JOBS:-$(nproc)}" --timeout 600
