#!/usr/bin/env bash
# Device call 6: the last build (a1daca0 + the OCTO_GEMV_NR_WIDE knob): the GPU tests on the card
# (the prefill's last-row head without the integer loops: gpu_prefill_head's 5e-3 contract; the
# conformance suites at the default precision), and the integer loops' wide GEMVs (gate|up, the LM
# head) at 8 rows a workgroup (OCTO_GEMV_NR_WIDE=8) against the default 4 in bench_decode.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
for t in gpu_prefill_head gpu_conformance_gemv gpu_conformance_fused gpu_gemm_tiles gpu_conformance; do
  echo "== $t" >> $OUT/tests.txt; timeout 100 $B/$t >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
done
grep -E "^== |test cases|rc=" $OUT/tests.txt > $OUT/tests-summary.txt
say "tests $(grep -c 'rc=0' $OUT/tests.txt) of 5 passed"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0; do
  ready $m; run default $m X=1; run wide8 $m OCTO_GEMV_NR_WIDE=8; run default $m X=1; run wide8 $m OCTO_GEMV_NR_WIDE=8
done
say done
