#!/usr/bin/env bash
# Device call 2 (same binaries as call 1, same warm machine: the peer built there): the 7B shapes, Q8_0
# and Q4_K_M. bench_decode pp512 / tg128, the default (norms ahead, RMSNORM_SWIGLU over every row)
# against OCTO_PREFILL_FUSION=residual, alternating, two rounds; the peer (llama-bench -p 512 -n 128 -r 2
# -fa 1 -ngl 99) on the same files.
# Run: bash benchmarks/results/2026-12-06-h100-prefill-epi/call2.sh   (carry .carry-s31, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s31
[ -x /tmp/new/bin/bench_decode ] || { rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new; }
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/env.txt 2>&1
rm -f $S/qwen2.5-0.5b-* $S/qwen2.5-1.5b-* $S/qwen3-*
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $N --keep --keep-hf --no-bench > $OUT/models-log.txt 2>&1
say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 90 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in qwen2.5-7b-q8_0 qwen2.5-7b-q4_k_m; do for r in 1 2; do run def $m; run residual $m OCTO_PREFILL_FUSION=residual; done; done
peer() {
  [ -x /tmp/peer-bin/llama-bench ] || { [ -f /tmp/peer-out/peer.tar.xz ] && mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin; }
  [ -x /tmp/peer-bin/llama-bench ] || { say "no peer"; return; }
  timeout 120 /tmp/peer-bin/llama-bench -m $S/$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
peer qwen2.5-7b-q8_0; peer qwen2.5-7b-q4_k_m
say done
