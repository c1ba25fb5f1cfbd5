#!/usr/bin/env bash
# Installs every Debian package Tessera's build, tests and demo need, only if missing.
# Idempotent and non-interactive; run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build make pkg-config
  libgtest-dev libgmock-dev   # tests
  libbenchmark-dev            # bench/
  ccache                      # faster rebuilds
  libopenblas-dev             # GEMM (OpenBLAS, pthreads build)
  liblapacke-dev              # tsr::linalg (LAPACKE over OpenBLAS's LAPACK)
  libdnnl-dev                 # convolutions (oneDNN)
  ocl-icd-opencl-dev          # oneDNN's CMake package finds OpenCL (a recommends, not a depends)
  libsleef-dev                # vectorised exp/log/tanh/... (SLEEF)
  libkissfft-dev              # tsr::fft (KISS FFT's header-only C++ template)
  python3 python3-venv        # tests/reference: JAX in a venv (never a library dependency)
  nlohmann-json3-dev          # checkpoint sidecars (JSON)
  libisal-dev                 # checkpoint checksums (CRC-32, ISA-L)
  libcli11-dev                # tsr-train's command line
  wamerican                   # tsr-train's default text: /usr/share/dict/words
  libopenmpi-dev openmpi-bin  # many processes (tsr::distributed, mpirun tests)
  dpkg-dev file lintian       # Debian packages (cpack, tests/install/check_deb.sh)
  doxygen                     # API reference (tests/docs: no undocumented public declaration)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: need root to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
