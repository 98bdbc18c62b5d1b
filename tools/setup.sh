#!/usr/bin/env bash
# Installs what hloc's test suite needs on a fresh machine, idempotently:
#   - libz3 (>= 4.13.3) from the z3-solver PyPI wheel, into .deps/z3/lib (git-ignored);
#   - NVRTC from the nvidia-cuda-nvrtc PyPI wheel, into .deps/nvrtc/lib, so CUDA C can be
#     compiled to PTX on a machine with no GPU;
#   - the rustfmt and clippy components and cargo-nextest, if they are missing.
#   - OpenMPI and libclang (Debian's libopenmpi-dev, openmpi-bin, libclang-dev) for the
#     `mpi` feature, which the suite builds (--all-features) and whose smoke test runs
#     `mpirun -np 4`: installed with apt-get (as root, else through sudo) when missing.
# Wheels are downloaded with pip (PyPI only) and unpacked with Python's zipfile: no pip
# install into any environment, nothing written outside the checkout but cargo's and
# rustup's own directories, no root needed. Nothing is registered with the system loader:
# tools/test.sh puts both directories on LD_LIBRARY_PATH for the processes it starts, and the
# `hloc` binary carries them as its run path (cli/build.rs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.deps"
mkdir -p "$deps"

python_bin="$(command -v python3 || command -v python)"

fetch_wheel() { # name==version destdir
  local spec="$1" dest="$2" tmp
  tmp="$(mktemp -d)"
  "$python_bin" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$spec"
  "$python_bin" - "$tmp" "$dest" <<'PY'
import sys, zipfile, pathlib
src, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
dest.mkdir(parents=True, exist_ok=True)
for whl in src.glob("*.whl"):
    with zipfile.ZipFile(whl) as z:
        z.extractall(dest)
PY
  rm -rf "$tmp"
}

# z3: the crate's build needs a directory holding libz3.so; the loader needs libz3.so.5.4.
if [ ! -e "$deps/z3/lib/libz3.so" ]; then
  echo "setup: fetching z3-solver 5.4.0.0 (libz3) from PyPI" >&2
  fetch_wheel "z3-solver==5.4.0.0" "$deps/z3/wheel"
  mkdir -p "$deps/z3/lib"
  lib="$(find "$deps/z3/wheel" -name 'libz3.so*' | head -n 1)"
  [ -n "$lib" ] || { echo "setup: libz3.so not found in the z3-solver wheel" >&2; exit 1; }
  cp "$lib" "$deps/z3/lib/libz3.so.5.4"
  ln -sf libz3.so.5.4 "$deps/z3/lib/libz3.so"
fi

# NVRTC 13.0 (pinned): libnvrtc.so.13 and its builtins library.
if [ -z "$(find "$deps/nvrtc/lib" -name 'libnvrtc.so*' 2>/dev/null | head -n 1)" ]; then
  echo "setup: fetching nvidia-cuda-nvrtc 13.0.88 from PyPI" >&2
  fetch_wheel "nvidia-cuda-nvrtc==13.0.88" "$deps/nvrtc/wheel"
  mkdir -p "$deps/nvrtc/lib"
  find "$deps/nvrtc/wheel" -name 'libnvrtc*.so*' -exec cp -P {} "$deps/nvrtc/lib/" \;
  ( cd "$deps/nvrtc/lib" && for f in libnvrtc.so.*; do [ -e libnvrtc.so ] || ln -sf "$f" libnvrtc.so; done )
fi

# OpenMPI and libclang (bindgen, for the `mpi` crate's bindings): the one system-wide
# install, apt's; the package lists are refreshed only when the install needs it.
mpi_pkgs=(libopenmpi-dev openmpi-bin libclang-dev)
mpi_installed() {
  local p
  for p in "${mpi_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || return 1
  done
}
if ! mpi_installed; then
  command -v apt-get >/dev/null 2>&1 \
    || { echo "setup: install OpenMPI (mpicc, mpirun) and libclang: ${mpi_pkgs[*]} on Debian" >&2; exit 1; }
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    # Without root, apt-get runs only through a sudo that needs no password here; anything
    # else stops with what is missing instead of a prompt or "sudo: command not found".
    if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true >/dev/null 2>&1; then
      echo "setup: the \`mpi\` feature (tools/test.sh builds --all-features) needs OpenMPI and libclang;" \
        "${mpi_pkgs[*]} are not installed and installing them needs root (apt-get) or a sudo" \
        "without a password. Ask an administrator for: apt-get install ${mpi_pkgs[*]}." \
        "Without them, run the tests with default features (no mpi, no z3):" \
        "LD_LIBRARY_PATH=$deps/z3/lib:$deps/nvrtc/lib cargo nextest run --workspace" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "setup: installing ${mpi_pkgs[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq "${mpi_pkgs[@]}" >/dev/null \
    || { $sudo apt-get update -qq && $sudo apt-get install -y -qq "${mpi_pkgs[@]}" >/dev/null; }
fi

# rustfmt and clippy: the test script checks formatting and lints.
for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "setup: adding the $comp component" >&2
    rustup component add "$comp"
  fi
done

if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest
fi
echo "setup: ok ($deps)" >&2
