#!/usr/bin/env bash
# Device call 3: the session's closing table. bench_decode pp512 + 128 and the peer on 0.5B Q8_0 / F16,
# 1.5B Q8_0 / F16 / Q4_K_M, 7B Q4_K_M; the decode GEMV width rule for 112-chunk rows (the 7B's 4-bit rows
# of 3584: 128 wide now, OCTO_GEMV_WG=64 the old width for those rows, in bench_gemv_bandwidth and in the
# 7B Q4_K_M decode); qwen_generate's defaults on a ~500-token prompt beside bench_decode (issue 17 item 5:
# the copies are filled when the weights are written, so the first prompt pass reads them); the GEMV
# and prefill conformance on the card.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,f16 --scratch $S --bin $B --keep --keep-hf --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --keep-hf --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_prefill_head >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 2 passed"
for r in 1 2; do for w in default 64; do
  e=X=1; [ $w = default ] || e=OCTO_GEMV_WG=$w
  env $e timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x3584 --dtypes q4_k --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"wg\":\"$w\",\"round\":$r,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done; done
say gemv
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 40 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 0.5b-f16 1.5b-q8_0 1.5b-f16 1.5b-q4_k_m; do
  ready $m; run default $m X=1; peer $m
done
say small
ready 7b-q4_k_m
m=7b-q4_k_m; run default $m X=1; run wg64 $m OCTO_GEMV_WG=64; run default $m X=1
peer $m
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
for i in 1 2; do
  timeout 100 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$P" -n 32 --json 2>>$OUT/log.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); print(json.dumps(d))" >> $OUT/user.jsonl
done
say done
