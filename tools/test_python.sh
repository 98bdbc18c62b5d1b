#!/usr/bin/env bash
# The Python package's tests (issue 34): the package installed the way its users install it,
# `pip install ./python` (maturin, python/pyproject.toml), into a virtual environment in
# .deps/pyvenv (git-ignored; it sees the system's site-packages, so a jax installed there is
# used), then pytest over python/tests against the installed package. numpy, ml_dtypes,
# pytest and maturin are installed into the environment when missing (jax too, unless
# HLOC_PY_JAX=0; the jax tests skip without it).
#
# maturin builds the extension with cargo's `dev` profile (optimized in this workspace, see
# Cargo.toml) into the workspace's target directory, so the crates it shares with the rest of
# tools/test.sh are compiled once; `--no-build-isolation` uses the environment's maturin
# rather than fetching one per build. HLOC_PY_PROFILE=release builds the wheel as a user's
# `pip install ./python` does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
venv="$root/.deps/pyvenv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
need=()
for m in numpy ml_dtypes pytest maturin; do
    "$py" -c "import $m" 2>/dev/null || need+=("$m")
done
if [ "${HLOC_PY_JAX:-1}" != 0 ] && ! "$py" -c "import jax" 2>/dev/null; then
    need+=(jax)
fi
if [ ${#need[@]} -gt 0 ]; then
    # maturin within the range python/pyproject.toml's build-system asks for.
    "$py" -m pip install --quiet --disable-pip-version-check "${need[@]/#maturin/maturin>=1.5,<2}"
fi
# A copy left by the former cargo-built test set-up would shadow nothing (python/ is not on
# the path) but is stale; remove it.
rm -f python/hloc/_hloc.abi3.so
start=$(date +%s)
# The build backend runs the environment's `maturin` command: its bin/ goes first on PATH.
PATH="$venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile ${HLOC_PY_PROFILE:-dev}" \
    "$py" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
    --force-reinstall ./python
echo "test_python: pip install ./python took $(( $(date +%s) - start )) s" >&2
# From the repository root, so `import hloc` finds the installed package, not python/hloc.
"$py" -m pytest -q -p no:cacheprovider python/tests "$@"
