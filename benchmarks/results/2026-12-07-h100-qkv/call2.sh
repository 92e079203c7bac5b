#!/usr/bin/env bash
# Device call 2 (fortieth session): where call1's Q4_K_M files lost 0.3-0.6% with the Q|K|V task (half
# their layers, those with a Q6_K v, run it as three launches): the one task as three launches
# (OCTO_GEMV_QKV=0) beside the default and the three tasks (OCTO_FUSION=no-qkv), two rounds, on 1.5B and
# 7B Q4_K_M; and the 0.5B in F16 (issue 15's 0.5B F16 target) with the peer on it.
# Binaries: .carry-s40/new.tar.xz (call1's). Run: bash .../call2.sh (carry .carry-s40, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s40/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s40/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types f16 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b,7b --types q4_k_m --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1; say "models made"
for r in 1 2; do
  for m in qwen2.5-0.5b-f16 qwen2.5-1.5b-q4_k_m qwen2.5-7b-q4_k_m; do
    for kv in OCTO_X=0 OCTO_GEMV_QKV=0 OCTO_FUSION=no-qkv; do
      env $kv timeout 90 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$kv\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m $kv: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
[ -n "$LB" ] && timeout 60 $LB -m $S/qwen2.5-0.5b-f16.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"qwen2.5-0.5b-f16\",/" >> $OUT/peer.jsonl
say "peer 0.5b f16: $(grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' $OUT/peer.jsonl | tr '\n' ' ')"
say done
