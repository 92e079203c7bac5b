#!/usr/bin/env bash
# Device call 6: Qwen3-0.6B and Qwen2.5-1.5B Q8_0 pp512 against the peer in the same run, the softmax in
# registers on (this session's default; these binaries predate the switch, so OCTO_ATTENTION_REGS=1).
# The peer: llama.cpp 3f545bec's Vulkan backend built here from the pack (tools/build_peer.sh --from-pack).
# Run: bash benchmarks/results/2026-12-07-h100-attn-regs/call6.sh   (carry .carry-s37 with peer-src.tar.xz, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 270 bash tools/build_peer.sh --from-pack .carry-s37/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/old /tmp/new; mkdir -p /tmp/old /tmp/new
tar -xJf .carry-s37/old.tar.xz -C /tmp/old; tar -xJf .carry-s37/new.tar.xz -C /tmp/new
O=/tmp/old/bin; N=/tmp/new; T=/tmp/old/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b,1.5b --types q8_0 --scratch $S --bin $O --keep --no-bench > $OUT/models-log.txt 2>&1
say "models made"
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do
  OCTO_ATTENTION_REGS=1 timeout 30 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt >> $OUT/octo.jsonl
  say "octo $m: $(tail -1 $OUT/octo.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
  [ -n "$LB" ] && timeout 40 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 0,1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m: $(grep -o '"n_prompt": [0-9]*, "n_gen": [0-9]*\|"avg_ts": [0-9.]*\|"flash_attn": [a-z0-9]*' $OUT/peer.jsonl | tail -8 | tr '\n' ' ')"
done
say done
