#!/usr/bin/env bash
# Installs what is missing, builds tsr-train, and trains the tiny character
# transformer for about a minute on 8 simulated devices, data- and tensor-parallel
# (a 4x2 mesh, rules dp+tp). Extra arguments go to tsr-train (see --help).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup.sh"
TSR_TARGET=tsr-train bash "$root/scripts/build.sh"
build="${TSR_BUILD_DIR:-$root/build}"
out="$build/train-demo"
mkdir -p "$out"
"$build/apps/tsr-train" --devices 8 --mesh 4x2 --rules dp+tp --model tiny --steps 200 \
  --batch 32 --seq 64 --out "$out" --checkpoint "$out/checkpoints" --every 100 "$@"
echo "open $out/loss.svg in a browser for the loss curve"
