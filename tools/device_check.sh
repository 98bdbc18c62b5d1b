#!/bin/bash
# The checks a session lent a GPU machine runs there (never part of the test suite).
#
#   tools/device_check.sh prepare   # here: fused corpus modules into device-check/ with
#                                   # target/release/hloc (cargo build --release -p hloc)
#   tools/device_check.sh run       # there (device tool, carry ["device-check"]): writes
#                                   # under $OUT
#   tools/device_check.sh run-hloc  # there (carry ["device-check"]): hloc itself on the GPU
#                                   # (`hloc run --backend cuda`), table in $OUT/hloc_cuda.tsv
#
# `prepare` also builds a stripped release hloc into device-check/hloc (the device image
# has no Rust) and writes the 512 MB memory-bound set into device-check/big/ (elementwise,
# row sum, column sum, softmax, transpose of f32[8192,16384]). `run-hloc` runs every corpus
# module with `--backend cuda --check-reference --expect` (XLA's recorded outputs on the
# recorded inputs), `--profile` on the memory-bound ones and on the 512 MB set (one line per
# kernel: time, bytes, GB/s), with NVRTC and cuBLAS from the image's Python
# (nvidia/cu13/lib) on LD_LIBRARY_PATH. Under 5 minutes.
#
# `run` prints the GPU's figures for device/descriptions/h100.toml (tools/gpu_probe.cu;
# bf16 GEMM rate through PyTorch), then has XLA:GPU compile and run hloc's h100-fused
# modules and that machine's XLA:CPU its cpu-fused ones (tools/fused_on_xla.py).
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
  cargo build --release -p hloc && mkdir -p device-check \
    && strip -o device-check/hloc target/release/hloc || echo "building hloc failed"
  mkdir -p device-check/big
  big() { # NAME, entry body lines
    printf 'HloModule %s\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nmax {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n\nENTRY main {\n  p = f32[8192,16384] parameter(0)\n  z = f32[] constant(0)\n%s\n}\n' "$1" "$2" > device-check/big/$1.hlo
  }
  big elementwise '  e = f32[8192,16384] exponential(p)
  ROOT r = f32[8192,16384] multiply(e, p)'
  big row_sum '  ROOT r = f32[8192] reduce(p, z), dimensions={1}, to_apply=add'
  big column_sum '  ROOT r = f32[16384] reduce(p, z), dimensions={0}, to_apply=add'
  big softmax '  ninf = f32[] constant(-inf)
  m = f32[8192] reduce(p, ninf), dimensions={1}, to_apply=max
  mb = f32[8192,16384] broadcast(m), dimensions={0}
  d = f32[8192,16384] subtract(p, mb)
  e = f32[8192,16384] exponential(d)
  s = f32[8192] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[8192,16384] broadcast(s), dimensions={0}
  ROOT r = f32[8192,16384] divide(e, sb)'
  big transpose '  ROOT r = f32[16384,8192] transpose(p), dimensions={1,0}'
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
run-hloc)
  libs=$(python3 -c "import nvidia, os; print(':'.join(d for p in nvidia.__path__ for d in [os.path.join(p, 'cu13', 'lib')] if os.path.isdir(d)))")
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" HLOC_CACHE_DIR=/tmp/hloc-cache
  hloc=device-check/hloc
  table=$OUT/hloc_cuda.tsv
  printf 'module\texit\tseconds\tresult\n' > $table
  memory_bound=" layernorm softmax activations f16_elementwise reductions logsumexp clamp_round convert_chains "
  for n in $(tail -n +2 corpus/MANIFEST.tsv | cut -f1); do
    d=corpus/$n
    prof=""
    case "$memory_bound" in *" $n "*) prof="--profile" ;; esac
    t0=$(date +%s.%N)
    timeout 60 $hloc run $d/before_optimizations.hlo --backend cuda --inputs $d/inputs.npz \
      --expect $d/outputs.npz --check-reference --no-timing $prof > $OUT/run_$n.txt 2>&1
    rc=$?
    t1=$(date +%s.%N)
    result=$(grep -E "DIFFERS|^check-reference|error|unsupported" $OUT/run_$n.txt | head -2 | tr '\t\n' '  ')
    printf '%s\t%s\t%.2f\t%s\n' "$n" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$result" >> $table
  done
  for f in device-check/big/*.hlo; do
    n=big_$(basename $f .hlo)
    t0=$(date +%s.%N)
    timeout 120 $hloc run $f --backend cuda --repeat 5 --profile > $OUT/run_$n.txt 2>&1
    rc=$?
    t1=$(date +%s.%N)
    printf '%s\t%s\t%.2f\t%s\n' "$n" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" "$(grep -E 'GB/s|time' $OUT/run_$n.txt | head -3 | tr '\t\n' '  ')" >> $table
  done
  # At most 8 files come back: the table, and the runs' logs in one archive.
  tar czf $OUT/hloc_cuda_runs.tgz -C $OUT $(cd $OUT && ls run_*.txt) && rm -f $OUT/run_*.txt
  column -t -s $'\t' $table | cut -c1-200
  ;;
*)
  echo "usage: tools/device_check.sh prepare|run|run-hloc" >&2
  exit 2
  ;;
esac
