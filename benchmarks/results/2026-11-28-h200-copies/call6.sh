#!/usr/bin/env bash
# Device call 6: the session's last build (copies freed with their weight, filled when made) on the card:
# gpu_gemm_tiles, gpu_prefill_head, gpu_conformance_fused "over many rows"; bench_decode 1.5B Q4_K_M with
# and without the copies (first_prefill_ms beside the best), qwen_generate on it.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_gemm_tiles > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_prefill_head >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_conformance_fused -tc="*over many rows*" >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 3 passed"
wait
m=1.5b-q4_k_m
for v in default copies0 default; do
  e=X=1; [ $v = default ] || e=OCTO_WEIGHT_COPIES=0
  env $e timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$v\",/" >> $OUT/decode.jsonl
done
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
timeout 100 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$P" -n 32 --json 2>>$OUT/log.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); print(json.dumps(d))" >> $OUT/user.jsonl
say done
