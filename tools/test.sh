#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs (tools/setup.sh: libz3
# and NVRTC from PyPI wheels into .deps/, cargo-nextest), then runs unit, integration,
# property and z3 tests with nextest, the doc tests, and checks that the benches build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools/setup.sh
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo nextest run --workspace --all-features --no-fail-fast --profile "${NEXTEST_PROFILE:-default}"
cargo test --workspace --all-features --doc
cargo check -p hloc-benches --benches --all-features
