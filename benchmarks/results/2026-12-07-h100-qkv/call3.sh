#!/usr/bin/env bash
# Device call 3 (fortieth session; the thirty-ninth session's call4, not run there): the self-rounding GEMVs' 4 rows
# (kernels/gemv.cpp) over the K-quants, which call3 did not measure: Qwen3-0.6B Q4_K_M (q, k, gate|up
# Q4_K; v Q6_K in some layers) and Q8_0 again, default against OCTO_GEMV_NR_NARROW=2 (the previous rule),
# two rounds alternating, and the peer on the same files. Rebuild the binaries first.
# Run: bash benchmarks/results/2026-12-07-h100-narrow/call4.sh   (carry .carry-s40, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s40/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s40/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b --types q8_0,q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models made"
for r in 1 2; do
  for m in qwen3-0.6b-q4_k_m qwen3-0.6b-q8_0; do
    for kv in OCTO_X=0 OCTO_GEMV_NR_NARROW=2; do
      env $kv timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$kv\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m $kv: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in qwen3-0.6b-q4_k_m qwen3-0.6b-q8_0; do
  [ -n "$LB" ] && timeout 60 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"$m\",/" >> $OUT/peer.jsonl
  say "peer $m: $(grep "\"$m\"" $OUT/peer.jsonl | grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' | tr '\n' ' ')"
done
say done
