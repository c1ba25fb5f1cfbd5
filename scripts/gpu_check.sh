#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool; see scripts/gpu_bundle.sh, which makes
# .gpu-bundle/ here first): the CUDA kernel tests (every CUDA kernel against the CPU
# kernel of the same primitive, the fused-chain code generator, coverage) and the
# CUDA benchmarks, then one summary. Logs go to $OUT (or /tmp/gpu_check). Under 8
# minutes: nothing is compiled there.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${OUT:-/tmp/gpu_check}"
mkdir -p "$logs"
bundle="$root/.gpu-bundle/bundle.tar.xz"
if [ ! -f "$bundle" ]; then
  echo "gpu_check: no $bundle: run scripts/gpu_bundle.sh on the build machine and carry .gpu-bundle"
  exit 2
fi
work=/tmp/tsr-gpu
rm -rf "$work" && mkdir -p "$work" && tar -C "$work" -xJf "$bundle"
# CUDA's libraries: the toolkit's, else the pip wheels' (the image's PyTorch has them).
cuda_dirs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null); do
  [ -d "$d" ] && cuda_dirs="$cuda_dirs:$d"
done
export LD_LIBRARY_PATH="$work/lib$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "commit: $(cat "$root/.gpu-bundle/commit" 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  if ldd "$work/bin/tsr_cuda_tests" "$work/bin/cuda_bench" | grep "not found"; then echo "missing libraries"; fi
} | tee "$logs/env.log"
start=$(date +%s)
TSR_CUDA_VIRTUAL_DEVICES=8 timeout 120 "$work/bin/tsr_cuda_tests" --gtest_brief=1 \
  --gtest_output="xml:$logs/cuda_tests.xml" 2>&1 | tee "$logs/cuda_tests.log"
tests_rc=${PIPESTATUS[0]}
# On the GPU machine a skipped GPU test means CUDA saw no usable device: a failure.
if grep -q '^\[  SKIPPED \]' "$logs/cuda_tests.log"; then
  echo "gpu_check: GPU tests skipped (no usable GPU): failing"
  tests_rc=1
fi
# Kernels vs cuBLAS / a copy, then the runtime's figures on 8 virtual devices.
TSR_CUDA_VIRTUAL_DEVICES=8 timeout 150 "$work/bin/cuda_bench" --reps 10 2>&1 | tee "$logs/cuda_bench.log"
bench_rc=${PIPESTATUS[0]}
# The rules table and the unit tests with CUDA as the default platform (8 virtual
# devices on the GPU): every mesh test runs its programs on CUDA devices against the
# one-device oracle. Primitives without a CUDA kernel fail with a BackendError: the
# counts (not the exit codes) are the result, and the failures list what is missing.
for t in tsr_rules_tests tsr_unit_tests; do
  TSR_PLATFORM=cuda TSR_CUDA_VIRTUAL_DEVICES=8 timeout 90 "$work/bin/$t" --gtest_brief=1 \
    --gtest_output="xml:$logs/$t.xml" >"$logs/$t.log" 2>&1
  echo "$t on CUDA: rc=$? $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$logs/$t.log") failed, $(grep -E '^\[  PASSED  \]' "$logs/$t.log")"
done | tee "$logs/cuda_platform.log"
# The main job's transformer step on one GPU and on its 8 virtual devices (tokens/s);
# "gemm" prints the step's GEMM GFLOP (timed on the CPU's OpenBLAS: only the count
# matters here; the GPU GEMM floor is that over cuda_bench's cuBLAS rate).
TSR_PLATFORM=cuda TSR_CUDA_VIRTUAL_DEVICES=8 timeout 60 "$work/bin/train_bench" \
  --configs gemm,1:1:dp,8:8:dp --warmup 2 --steps 5 --reps 3 >"$logs/train_bench.log" 2>&1
echo "train_bench on CUDA: rc=$?" | tee -a "$logs/cuda_platform.log"
grep -E "ms/step" "$logs/train_bench.log" | tee -a "$logs/cuda_platform.log"
# The differential fuzzer's campaign on the CUDA devices (each case against its
# one-device run on the same platform; a MISMATCH / CRASH line is a finding).
TSR_PLATFORM=cuda TSR_CUDA_VIRTUAL_DEVICES=8 timeout 60 "$work/bin/tsr_fuzz" --seed 2 \
  --count 1000 --summary >"$logs/fuzz.log" 2>&1
echo "tsr_fuzz on CUDA: rc=$? $(grep -E 'cases=' "$logs/fuzz.log")" | tee -a "$logs/cuda_platform.log"
echo "==== gpu_check summary ($(($(date +%s) - start)) s)"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran" "$logs/cuda_tests.log" | tail -5
grep -E "^GPU:|ratio|us/op|fraction|skipped" "$logs/cuda_bench.log"
cat "$logs/cuda_platform.log"
echo "tests rc=$tests_rc bench rc=$bench_rc"
[ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
