#!/usr/bin/env bash
# Device call 5: why the first prefill pass of a 7B is slow (call4: bench_decode's warm-up pass 201 ms
# against 65 ms for the later ones; qwen_generate's single pass 221-328 ms; the 0.5B shows no such gap).
# nvidia-smi samples the SM clock and the performance state every 20 ms (read-only) while qwen_generate
# loads the 7B Q4_K_M and prefills 550 tokens; the tool's own phases are stamped in log.txt.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T.%N) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
m=7b-q4_k_m
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 20 > $OUT/smi.csv 2>&1 &
SMI=$!
sleep 2
for i in 1 2; do
  say "qwen_generate $i start"
  timeout 100 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$P" -n 32 --json 2>>$OUT/log.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); print(json.dumps(d))" >> $OUT/user.jsonl
  say "qwen_generate $i end"
  sleep 2
done
say "bench_decode start"
timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 2 >> $OUT/decode.jsonl 2>>$OUT/log.txt
say "bench_decode end"
kill $SMI
say done
