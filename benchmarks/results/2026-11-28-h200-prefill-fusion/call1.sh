#!/usr/bin/env bash
# Device call 1 (eleventh session): the tenth session's unmeasured changes on the card. (1) The
# tensor-core GEMM epilogue (residual) and norm staging, the layer observer over many workgroups:
# gpu_conformance_fused "over many rows", gpu_prefill_head, gpu_gemm_tiles, gpu_layer_stats. (2) The fused
# prefill (OCTO_PREFILL_FUSION=1) against the plain one, alternating, bench_decode pp512 + 128 on 1.5B
# Q4_K_M, 7B F16 and 7B Q4_K_M, and the last-row logits of both (qwen_generate --dump-logits). (3) The
# streamed 7B F16 at 2048 tokens under 4 GiB (the observer fix), plain and fused. (4) The peer.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 $B/gpu_conformance_fused -tc="*over many rows*" > $OUT/conformance_fused.txt 2>&1; echo "rc=$?" >> $OUT/conformance_fused.txt
say "fused $(tail -3 $OUT/conformance_fused.txt | tr '\n' ' ')"
timeout 120 $B/gpu_prefill_head > $OUT/prefill_head.txt 2>&1; echo "rc=$?" >> $OUT/prefill_head.txt
say "head $(tail -3 $OUT/prefill_head.txt | tr '\n' ' ')"
timeout 120 $B/gpu_layer_stats > $OUT/layer_stats.txt 2>&1; echo "rc=$?" >> $OUT/layer_stats.txt
say "stats $(tail -3 $OUT/layer_stats.txt | tr '\n' ' ')"
timeout 150 $B/gpu_gemm_tiles > $OUT/gemm_tiles.txt 2>&1; echo "rc=$?" >> $OUT/gemm_tiles.txt
say "tiles $(tail -3 $OUT/gemm_tiles.txt | tr '\n' ' ')"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 1.5b-q4_k_m 7b-f16 7b-q4_k_m; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  for fu in 0 1; do
    OCTO_PREFILL_FUSION=$fu timeout 60 $B/qwen_generate -m $f -p "The quick brown fox jumps over the lazy dog because" -n 1 --dump-logits $OUT/logits-$m-fusion$fu.npy > /dev/null 2>>$OUT/log.txt
  done
  for r in 1 2; do
    for fu in 0 1; do
      OCTO_PREFILL_FUSION=$fu timeout 120 $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m fusion $fu" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    done
  done
  say "$m"
  if [ $m = 7b-f16 ]; then
    for fu in 0 1; do
      OCTO_PREFILL_FUSION=$fu timeout 200 $B/bench_stream --model $f --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 2 --name "4GiB 2048 fusion $fu" >> $OUT/stream.jsonl 2>>$OUT/log.txt
      say "stream fusion $fu"
    done
  fi
done
python3 - <<PY >> $OUT/log.txt 2>&1
import numpy as np, glob
for m in ["1.5b-q4_k_m", "7b-f16", "7b-q4_k_m"]:
    try:
        a = np.load("$OUT/logits-%s-fusion0.npy" % m).astype(np.float64); b = np.load("$OUT/logits-%s-fusion1.npy" % m).astype(np.float64)
        print(m, "rel L2", np.linalg.norm(a - b) / np.linalg.norm(a), "argmax", a.argmax(), b.argmax())
    except Exception as e: print(m, e)
PY
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 1.5b-q4_k_m 7b-f16 7b-q4_k_m; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  [ $(( $(date +%s) - T0 )) -lt 520 ] || { say "no time for peer $m"; continue; }
  timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
