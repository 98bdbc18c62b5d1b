#!/usr/bin/env bash
# The Python package's tests (issue 34): a virtual environment in .deps/pyvenv (git-ignored;
# it sees the system's site-packages, so a jax installed there is used), maturin, numpy,
# ml_dtypes and pytest installed into it when missing (jax too, unless HLOC_PY_JAX=0; the
# jax tests skip without it), the extension built by `maturin develop` in cargo's dev
# profile into the workspace's target directory (sharing what the rest of the suite built),
# then pytest over python/tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
venv="$root/.deps/pyvenv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
need=()
[ -x "$venv/bin/maturin" ] || need+=("maturin>=1.5,<2")
for m in numpy ml_dtypes pytest; do
    "$py" -c "import $m" 2>/dev/null || need+=("$m")
done
if [ "${HLOC_PY_JAX:-1}" != 0 ] && ! "$py" -c "import jax" 2>/dev/null; then
    need+=(jax)
fi
if [ ${#need[@]} -gt 0 ]; then
    "$py" -m pip install --quiet --disable-pip-version-check "${need[@]}"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
(cd python && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop --quiet 2>&1 | tail -n 20 || exit 1)
"$py" -m pytest -q python/tests "$@"
