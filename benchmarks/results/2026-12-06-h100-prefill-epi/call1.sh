#!/usr/bin/env bash
# Device call 1 (main at 3a63c30 + the prefill epilogues of the thirty-first sessions, uncommitted): are
# they right on tensor cores, and faster? gpu_conformance_fused (the SWIGLU and the norm ahead over many
# rows, every GEMM kernel the device has), gpu_prefill_head (the default prefill's logits against the
# plain one's), gpu_conformance (the prefill attention with and without the key tile prefetch) and
# gpu_fused_decode on the device; then bench_decode pp512 / tg128, alternating, two rounds: the new
# default (RMSNORM_GEMV / RMSNORM_SWIGLU over every row, the norm ahead from 256 rows) against
# OCTO_PREFILL_FUSION=residual (the previous default: residual adds only), the norm in the GEMM staging
# (OCTO_GEMM_NORM_AHEAD=0) and the attention prefetch (OCTO_ATTENTION_PREFETCH=1); the peer (llama.cpp
# 3f545bec, llama-bench -p 512 -n 128 -r 2 -fa 1 -ngl 99) on the same files in the same call.
# Run: bash benchmarks/results/2026-12-06-h100-prefill-epi/call1.sh   (carry .carry-s31, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s31
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $OUT/env.txt 2>&1
( JOBS=10 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( mk 0.5b q8_0,f16; mk qwen3-0.6b q8_0; mk 1.5b q8_0,q4_k_m ) > $OUT/models-log.txt 2>&1 &
models=$!
conf() {  # binary [doctest filter]
  local t=$1; shift
  timeout 180 $N/$t "$@" > $OUT/conf-$t.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf-$t.txt | tail -1)"
}
conf gpu_conformance_fused -tc="*over many rows*"; conf gpu_prefill_head; conf gpu_fused_decode
conf gpu_conformance -tc="*prefill ATTENTION_TILE*"
wait $models; say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in qwen2.5-0.5b-q8_0 qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0 qwen2.5-1.5b-q4_k_m qwen2.5-0.5b-f16; do
  for r in 1 2; do
    run def $m; run residual $m OCTO_PREFILL_FUSION=residual; run staging $m OCTO_GEMM_NORM_AHEAD=0; run prefetch $m OCTO_ATTENTION_PREFETCH=1
  done
done
# Under 256 rows the norm stays in the GEMMs' staging (kNormAheadRows): a 128-token prompt, default against residual.
run128() { local l=$1 m=$2; shift 2; env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 128 --decode-tokens 16 --repeat 3 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l-pp128\",/" >> $OUT/decode.jsonl
  say "$m $l pp128: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*')"; }
for m in qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do for r in 1 2; do run128 def $m; run128 residual $m OCTO_PREFILL_FUSION=residual; done; done
for l in def residual; do
  e=(); [ $l = residual ] && e=(OCTO_PREFILL_FUSION=residual)
  env "${e[@]}" timeout 60 $N/bench_decode --model $S/qwen2.5-0.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 8 --profile > $OUT/profile-0.5b-$l.txt 2>&1
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
for m in qwen2.5-0.5b-q8_0 qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0 qwen2.5-1.5b-q4_k_m qwen2.5-0.5b-f16; do peer $m; done
[ -f /tmp/peer-out/peer.json ] && cp /tmp/peer-out/peer.json $OUT/
say done
