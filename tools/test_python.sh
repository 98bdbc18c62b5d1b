#!/usr/bin/env bash
# The Python package's tests (issue 34): the extension module built by cargo into the
# workspace's target directory and put beside the pure-Python part (python/hloc/_hloc.abi3.so,
# git-ignored), then pytest over python/tests with python/ on PYTHONPATH, in a virtual
# environment in .deps/pyvenv (git-ignored; it sees the system's site-packages, so a jax
# installed there is used) with numpy, ml_dtypes and pytest installed when missing (jax too,
# unless HLOC_PY_JAX=0; the jax tests skip without it).
#
# The build asks cargo for the same targets and features as the rest of tools/test.sh
# (`--workspace --all-features` with the tests), so every workspace crate is shared with
# nextest's build and only pyo3, numpy and the extension itself are compiled here
# (PYO3_BUILD_EXTENSION_MODULE: no libpython linked, as maturin builds it). HLOC_PY_CARGO_ARGS
# replaces those arguments (e.g. `-p hloc-python` alone). `pip install ./python` builds the
# same crate through maturin (pyproject.toml).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
venv="$root/.deps/pyvenv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
need=()
for m in numpy ml_dtypes pytest; do
    "$py" -c "import $m" 2>/dev/null || need+=("$m")
done
if [ "${HLOC_PY_JAX:-1}" != 0 ] && ! "$py" -c "import jax" 2>/dev/null; then
    need+=(jax)
fi
if [ ${#need[@]} -gt 0 ]; then
    "$py" -m pip install --quiet --disable-pip-version-check "${need[@]}"
fi
target="${CARGO_TARGET_DIR:-$root/target}"
# shellcheck disable=SC2086 # the arguments are words
PYO3_BUILD_EXTENSION_MODULE=1 PYO3_PYTHON="$py" \
    cargo build ${HLOC_PY_CARGO_ARGS:---workspace --all-features --lib --bins --tests}
cp "$target/debug/lib_hloc.so" python/hloc/_hloc.abi3.so
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -q -p no:cacheprovider python/tests "$@"
