#!/usr/bin/env bash
# Makes the virtual environment the reference checks run JAX from (PyPI: jax CPU, and
# optax for the training check in tests/reference/train/).
# Idempotent; never a dependency of the library. Path: $TSR_REFERENCE_VENV, default
# .venv-reference at the repository root.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${TSR_REFERENCE_VENV:-$root/.venv-reference}"
want="jax==0.10.2 jaxlib==0.10.2 optax==0.2.8"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import jax, optax; assert jax.__version__ == '0.10.2' and optax.__version__ == '0.2.8'" 2>/dev/null; then
  echo "reference venv: jax and optax present in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check $want
echo "reference venv: installed $want into $venv"
