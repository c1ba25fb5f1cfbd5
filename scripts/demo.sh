#!/usr/bin/env bash
# Installs what is missing, builds, and runs the tour example.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
TSR_TARGET=tour bash "$root/scripts/build.sh"
"${TSR_BUILD_DIR:-$root/build}/examples/tour"
