#!/bin/bash
# The checks a session lent a GPU machine runs there (never part of the test suite).
#
#   tools/device_check.sh prepare   # here: fused corpus modules into device-check/ with
#                                   # target/release/hloc (cargo build --release -p hloc)
#   tools/device_check.sh run       # there (device tool, carry ["device-check"]): writes
#                                   # under $OUT
#
# `run` prints the GPU's figures for device/descriptions/h100.toml (tools/gpu_probe.cu;
# bf16 GEMM rate through PyTorch), then has XLA:GPU compile and run hloc's h100-fused
# modules and that machine's XLA:CPU its cpu-fused ones (tools/fused_on_xla.py).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
  for t in h100 cpu; do
    mkdir -p device-check/$t
    for n in $(tail -n +2 corpus/MANIFEST.tsv | cut -f1); do
      target/release/hloc fuse corpus/$n/before_optimizations.hlo --target $t \
        > device-check/$t/$n.fused.hlo || echo "hloc fuse --target $t failed on $n"
    done
  done
  ;;
run)
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee $OUT/smi.txt
  python -c "import jax, jaxlib; print('jax', jax.__version__, jaxlib.__version__, jax.devices())" 2>&1 | tail -1 | tee $OUT/jax.txt
  (nvcc -O3 -arch=sm_90 -o $OUT/gpu_probe tools/gpu_probe.cu && $OUT/gpu_probe) 2>&1 | tee $OUT/probe.txt
  python - <<'PY' 2>&1 | tee $OUT/bf16.txt
import time, torch
for n in (4096, 8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    print(f"bf16_gemm_{n}_flops_per_s = {2 * n**3 * 20 / (time.perf_counter() - t):.4g}")
PY
  timeout 300 python tools/fused_on_xla.py --platform cuda --from-dir device-check/h100 \
    --out $OUT/h100 2>&1 | tee $OUT/xla_gpu.txt | tail -60
  timeout 120 python tools/fused_on_xla.py --platform cpu --from-dir device-check/cpu \
    --out $OUT/cpu 2>&1 | tee $OUT/xla_cpu.txt | tail -3
  ;;
*)
  echo "usage: tools/device_check.sh prepare|run" >&2
  exit 2
  ;;
esac
