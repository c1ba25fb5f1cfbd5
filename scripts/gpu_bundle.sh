#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh runs on a lent GPU machine: the CUDA kernel tests,
# the CUDA benchmark, and the unit and rules test programs, the fuzzer and the
# transformer training benchmark (run there with CUDA as the default platform). That machine has CUDA,
# CMake and ninja but none of Tessera's Debian dependencies and no network, so the
# CUDA test and benchmark programs are built here (TSR_CUDA on; PTX for sm_90 by
# default, which the driver compiles at load, or TSR_CUDA_ARCHITECTURES=90-real) and
# travel with libtsr.so and every non-CUDA, non-glibc library they load, stripped of
# debug info, as .gpu-bundle/bundle.tar.xz (.gitignore has it; 21 MB at d383976).
# Then call the device tool:
#   run(command="bash scripts/gpu_check.sh", carry=[".gpu-bundle"], timeout_s=540)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TSR_BUILD_DIR:-$root/build}"
out="$root/.gpu-bundle"
if ! grep -q "tsr_cuda_objects" "$build/build.ninja" 2>/dev/null; then
  TSR_TARGET="tsr_cuda_tests" bash "$root/scripts/build.sh" -DTSR_CUDA=ON
fi
cmake --build "$build" -j "${TSR_JOBS:-$(nproc)}" --target tsr_cuda_tests cuda_bench \
  tsr_rules_tests tsr_unit_tests tsr_fuzz train_bench
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$build/tests/tsr_cuda_tests" "$build/bench/cuda_bench" "$build/tests/tsr_rules_tests" \
  "$build/tests/tsr_unit_tests" "$build/tests/fuzz/tsr_fuzz" "$build/bench/train_bench" \
  "$stage/bin/"
# Every library the programs load, except glibc's and CUDA's (the GPU machine has its
# own CUDA; its driver must match it). libstdc++ travels: gcc 12's may be newer there.
for lib in $(ldd "$stage"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libcuda.so* | \
      libcudart.so* | libcublas* | libnvrtc* | libnccl.so*) continue ;;
  esac
  cp -L "$lib" "$stage/lib/"
done
strip --strip-debug "$stage"/bin/* "$stage"/lib/*
mkdir -p "$out"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
git -C "$root" rev-parse --short HEAD >"$out/commit" 2>/dev/null || true
du -h "$out/bundle.tar.xz"
