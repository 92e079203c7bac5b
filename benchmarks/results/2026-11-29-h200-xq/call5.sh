#!/usr/bin/env bash
# Device call 5: what makes the x loads expensive (probes, wrong results, timing only; a build of
# 0fe1477 with probe.diff): OCTO_GEMV_PROBE=1 x and the RMSNORM weight not loaded; 5 the same bytes per
# workgroup read coalesced (within each 512-element block, vec4 k of run u at 32k + u: a warp's load
# touches 4-8 cache lines instead of 16); 6 the same lines per load but every workgroup in the same
# 2 KB of x and of the norm weight (L1 hits, no L2 traffic). If 5 ~ 1 the L1's wavefronts bound the
# loads; if 6 ~ 1 the bytes from L2 do.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz) && (cd .carry-probe && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; P=$PWD/.carry-probe/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 30 $P/bench_gemv_bandwidth --sizes 37888x3584 --dtypes q8_0 --passes 10 --bandwidth-gbs 4800 > /dev/null 2>&1  # warm-up
for p in 0 1 5 6; do
  OCTO_GEMV_PROBE=$p timeout 60 $P/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584 --dtypes q8_0,q4_k --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"probe\":$p,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done
say gemv
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $P/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 7b-q4_k_m 7b-q8_0 0.5b-q8_0; do ready $m
  for p in 0 1 5 6; do run probe$p $m OCTO_GEMV_PROBE=$p; done; say "decode $m"; done
say done
