#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs (tools/setup.sh: libz3
# and NVRTC from PyPI wheels into .deps/, cargo-nextest, Debian's OpenMPI and libclang for
# the `mpi` feature, whose `mpirun -np 4` smoke test, cli/tests/mpi.rs, nextest runs with
# the rest; apt-get needs root or sudo, only when they are missing), puts .deps' libraries
# on the loader path of every process it starts (nothing registered in /etc), checks formatting
# (rustfmt), the crate edges against ARCHITECTURE.md, that no crate has a circle of files, and
# lints (clippy with warnings as errors, so missing docs fail), checks that the benches build,
# runs the doc tests and the Python package's pytest suite (tools/test_python.sh), then
# unit, integration, property and z3 tests with nextest (last, so its summary closes the
# output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/setup.sh
# Test binaries link libz3 (the `z3` feature) and open NVRTC at run time; the loader finds
# both here, before anything else on the machine's path.
export LD_LIBRARY_PATH="$PWD/.deps/z3/lib:$PWD/.deps/nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo fmt --all --check
python3 tools/check_crate_edges.py
python3 tools/check_file_cycles.py
cargo clippy --workspace --all-targets --all-features -- -D warnings
cargo check -p hloc-benches --benches --all-features
cargo test --workspace --all-features --doc
# The Python package `hloc` (python/): its extension built with the tests' features, its
# pytest suite in .deps/pyvenv.
tools/test_python.sh
cargo nextest run --workspace --all-features --no-fail-fast --profile "${NEXTEST_PROFILE:-default}"
