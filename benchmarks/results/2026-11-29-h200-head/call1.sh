#!/usr/bin/env bash
# Device call 1: (a) the LM head's GEMV at 0.5B / 1.5B Q8_0 under the row and x-rounding knobs
# (bench_decode --profile: the `RMSNORM_GEMV logits` row; OCTO_GEMV_NR_WIDE=8 and OCTO_GEMV_X8=1 reach
# every wide / norm-fused GEMV, so the step totals say what a head-only rule would be worth only through
# the per-task rows); (b) qwen_generate's first prompt pass on a 7B Q4_K_M with the GPU idle before it,
# and with a one-SM keep-alive (torch.cuda._sleep in a loop, another process) running from before its
# start: is the slow first pass the clock's ramp (2026-11-28-h200-copies call5), and does work on the
# GPU while the model loads keep the clock up?
# Run: bash benchmarks/results/2026-11-29-h200-head/call1.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-head
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T.%N) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
prof() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 90 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 64 --profile > $OUT/p.txt 2>&1
  echo "== $m $l" >> $OUT/profiles.txt
  grep -E '^\{"name":"decode"|profile_role|profile_step' $OUT/p.txt | grep -v '"phase":"prefill"' >> $OUT/profiles.txt
  say "$m $l: $(grep -o '"decode_tok_s":[0-9.]*' $OUT/p.txt | head -1) head $(grep 'RMSNORM_GEMV logits' $OUT/p.txt | grep -o '"us":[0-9.]*' | head -1)"
}
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" >> $OUT/log.txt 2>&1
for m in 0.5b-q8_0 1.5b-q8_0; do ready $m
  for r in 1 2; do
    prof default $m
    prof nr8 $m OCTO_GEMV_NR_WIDE=8
    prof x8 $m OCTO_GEMV_X8=1
    prof nr8x8 $m OCTO_GEMV_NR_WIDE=8 OCTO_GEMV_X8=1
  done
done
ready 7b-q4_k_m
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,power.draw,utilization.gpu --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
user() {  # label
  say "qwen_generate $1 start"
  timeout 100 $B/qwen_generate --model $S/qwen2.5-7b-q4_k_m.gguf -p "$P" -n 16 --json 2>>$OUT/log.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); d['v']='$1'; print(json.dumps(d))" >> $OUT/user.jsonl
  say "qwen_generate $1 end: $(tail -1 $OUT/user.jsonl | grep -o '"prefill_tok_s": [0-9.]*')"
}
for r in 1 2; do
  sleep 8; user idle
  sleep 8
  python3 -c "
import torch, time
t = time.time()
while time.time() - t < 60: torch.cuda._sleep(400000); torch.cuda.synchronize()
" > /dev/null 2>&1 &
  K=$!; sleep 3; user keepalive; kill $K; wait $K 2>/dev/null
done
kill $SMI
say done
