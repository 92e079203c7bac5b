#!/usr/bin/env bash
# Device call 6 (the session's last 160 s of device time): x rounded once ahead of the integer-dot GEMVs
# (OCTO_GEMV_X8: 0 off, 1 the RMSNORM-fused ones, 2 all) on 7B Q4_K_M, short runs; the same-runs case of
# gpu_conformance_gemv on the card while the model is made.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz) && (cd .carry-x8 && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; X=$PWD/.carry-x8/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1 &
timeout 40 $X/gpu_conformance_gemv -tc="*ahead*" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests: $(grep 'test cases' $OUT/tests.txt)"
n=0; while [ ! -f $S/qwen2.5-7b-q4_k_m.gguf ] && [ $n -lt 100 ]; do sleep 2; n=$((n+1)); done; sleep 1
for x8 in 0 2 1; do
  OCTO_GEMV_X8=$x8 timeout 40 $X/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 64 --decode-tokens 64 --repeat 1 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"x8\":$x8,/" >> $OUT/decode.jsonl
  say "x8=$x8 $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*')"
done
say done
