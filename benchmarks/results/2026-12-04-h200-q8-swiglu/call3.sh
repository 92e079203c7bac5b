#!/usr/bin/env bash
# Device call 3, on call2's warm machine (its models in /tmp/models, the peer built in /tmp/peer-out):
# call2's peer runs failed (its llama-bench pack was read while still being written), so the peer on each
# file, octo again beside it. Run: bash benchmarks/results/2026-12-04-h200-q8-swiglu/call3.sh
set -u
T0=$(date +%s)
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
N=/tmp/new/bin; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
rm -rf /tmp/peer-bin; mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin || say "peer unpack failed"
cp /tmp/peer-out/peer.json $OUT/ 2>/dev/null
for m in qwen3-8b-q4_k_m llama-8b-q4_k_m qwen2.5-3b-q4_k_m qwen3-0.6b-q8_0 qwen3-1.7b-q8_0 llama-1b-q8_0; do
  timeout 90 /tmp/peer-bin/llama-bench -m $S/$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"def\",/" >> $OUT/decode.jsonl
  say "$m: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
done
say done
