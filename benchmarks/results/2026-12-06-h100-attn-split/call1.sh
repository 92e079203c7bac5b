#!/usr/bin/env bash
# Device call 1 (main at the thirty-third session's RoPE / KV epilogue commit + OCTO_PREFILL_FUSION=norms,
# uncommitted): the prefill attention with its keys split over subgroups (attention_coop's KS), Qwen3's
# per-head norms folded into their RoPE (RMSNORM_ROPE / RMSNORM_ROPE_KV) and q, k, v with RoPE and the
# cache write in the GEMM kernels' epilogue. Conformance on the card (every attention_coop form against
# the reference VM; the RoPE / KV epilogue in every GEMM kernel; RMSNORM_ROPE(_KV) over 37 rows; the
# whole-model fused prefill, Qwen3 included), then per attention form the prefill ATTENTION_TILE time
# from bench_decode --profile (tasks serialized), then pp512 / tg128 (bench_decode, two rounds,
# alternating): the default, OCTO_PREFILL_FUSION=norms (the previous default: no RoPE / KV chains) and
# two split forms, and the peer (llama.cpp 3f545bec, llama-bench -p 512 -n 128 -r 2 -fa 1 -ngl 99) on
# the same files.
# Run: bash benchmarks/results/2026-12-06-h100-attn-split/call1.sh   (carry .carry-s33, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s33
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv >> $OUT/log.txt 2>&1
( JOBS=10 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( mk qwen3-0.6b q8_0; mk 0.5b q8_0; mk 1.5b q8_0 ) > $OUT/models-log.txt 2>&1 &
models=$!
conf() {  # binary [doctest filter]
  local t=$1; shift
  echo "=== $t $*" >> $OUT/conf.txt
  timeout 240 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"
}
conf gpu_conformance -tc="*prefill ATTENTION_TILE*"; conf gpu_conformance_fused -tc="*RoPE / KV epilogue*,*RMSNORM_ROPE and*,*over many rows*"; conf gpu_prefill_head
wait $models; say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
forms="64:1 32:2 16:4 64:2 32:4 16:2 16:1 32:1"
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
  for f in $forms; do
    OCTO_ATTENTION_ROWS=${f%:*} OCTO_ATTENTION_SPLIT=${f#*:} timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
    a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
    g=$(grep '"profile","phase":"prefill"' /tmp/prof.txt | grep -o '"gpu_us":[0-9.]*')
    echo "$m rows:split=$f attention $a prefill $g" >> $OUT/attn-sweep.txt
    [ $f = 64:1 ] && { echo "== $m" >> $OUT/profiles.txt; grep '"phase":"prefill"' /tmp/prof.txt | grep -v profile_task >> $OUT/profiles.txt; }
  done
  say "$m swept: $(grep $m $OUT/attn-sweep.txt | sed 's/.*split=//' | tr '\n' ';')"
done
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
  for r in 1 2; do
    run def $m; run norms $m OCTO_PREFILL_FUSION=norms; run r32s2 $m OCTO_ATTENTION_ROWS=32 OCTO_ATTENTION_SPLIT=2; run r16s4 $m OCTO_ATTENTION_ROWS=16 OCTO_ATTENTION_SPLIT=4
  done
done
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
peer() {
  [ -f /tmp/peer-out/peer.tar.xz ] || return
  mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  timeout 90 /tmp/peer-bin/llama-bench -m $S/$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do peer $m; done
say done
