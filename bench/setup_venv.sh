#!/usr/bin/env bash
# Makes the virtual environment the training benchmark's references run from
# (bench/train_torch.py, bench/train_jax.py): PyTorch 2.x on CPU, jax 0.10.2 + optax
# 0.2.8 (the versions tests/reference/ checks against), numpy. Idempotent; never a
# dependency of the library or its tests. Path: $TSR_BENCH_VENV, default .venv-bench at
# the repository root. $TSR_BENCH_TORCH overrides the torch requirement.
#
# PyTorch's CPU wheel comes from PyTorch's own index; where that index cannot be
# reached, pip falls back to PyPI's torch, the CUDA build (its nvidia-* wheels add
# ~3 GB) which runs on the CPU all the same.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TSR_BENCH_VENV:-$root/.venv-bench}"
torch_req="${TSR_BENCH_TORCH:-torch>=2,<3}"
ref="jax==0.10.2 jaxlib==0.10.2 optax==0.2.8 numpy"
check='import torch, jax, optax, numpy
assert torch.__version__.startswith("2."), torch.__version__
assert jax.__version__ == "0.10.2" and optax.__version__ == "0.2.8"
print(f"torch {torch.__version__}, jax {jax.__version__}, optax {optax.__version__}, numpy {numpy.__version__}")'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
  echo "bench venv: present in $venv: $("$venv/bin/python" -c "$check")"
  exit 0
fi
python3 -m venv "$venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
"${pip[@]}" $ref
if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  if ! "${pip[@]}" --index-url https://download.pytorch.org/whl/cpu "$torch_req" 2>/dev/null; then
    echo "bench venv: PyTorch's CPU index unreachable; installing PyPI's torch (CUDA build, runs on CPU)"
    "${pip[@]}" "$torch_req"
  fi
fi
echo "bench venv: $("$venv/bin/python" -c "$check") in $venv"
