#!/usr/bin/env bash
# Device call 2: call1 trimmed to fit a short device budget (two models, one pass of the attention sweep,
# pp512 in two rounds), the decode step's profile at 1k
# context, and a sweep of the tensor-core GEMM's smaller tiles on the 0.5B / 1.5B shapes. Call 1 (the thirty-fourth session's prefill attention with its softmax in registers,
# attention_coop's REGS, and the tensor-core GEMMs' epilogue from registers, gemm_coop's EPI_REGS,
# binaries of 65e8f0d): the VM's probe of the cooperative matrices' layout (octo_devices --boot), conformance on
# the card (every prefill attention form, REGS on and off; the GEMMs' fused forms with the epilogue read
# from registers and staged; gpu_gemm_tiles; the whole-model fused prefill) against the reference VM, then
# per attention form the prefill ATTENTION_TILE time (bench_decode --profile, tasks serialized), then
# pp512 / tg128 with both (regs), the attention alone (attn) and neither (old, the default),
# alternating, two rounds, and bench_gemm with the epilogue either way. No peer
# in this call (device starts failed for most of the session; its time was short).
# Run: bash benchmarks/results/2026-12-06-h100-attn-regs/call2.sh   (carry .carry-s34 with new1.tar.xz, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s34
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $OUT/log.txt 2>&1
$N/octo_devices --boot >> $OUT/log.txt 2>&1
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( mk qwen3-0.6b q8_0; mk 1.5b q8_0 ) > $OUT/models-log.txt 2>&1 &
models=$!
conf() {  # binary [doctest filter]
  local t=$1; shift
  echo "=== $t $*" >> $OUT/conf.txt
  timeout 240 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"
}
conf gpu_conformance -tc="*prefill ATTENTION_TILE*"; conf gpu_conformance_fused -tc="*over many rows*"; conf gpu_prefill_head
wait $models; say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
for m in qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do
  for f in 64:1:1 64:1:0 32:2:0; do
    IFS=: read rows split regs <<< "$f"
    OCTO_ATTENTION_ROWS=$rows OCTO_ATTENTION_SPLIT=$split OCTO_ATTENTION_REGS=$regs timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
    a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
    g=$(grep '"profile","phase":"prefill"' /tmp/prof.txt | grep -o '"gpu_us":[0-9.]*')
    echo "$m rows:split:regs=$f attention $a prefill $g" >> $OUT/attn-sweep.txt
  done
  say "$m swept: $(grep $m $OUT/attn-sweep.txt | sed 's/.*regs=//' | tr '\n' ';')"
done
run() {  # label model tokens env...
  local l=$1 m=$2 n=$3; shift 3
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 90 $N/bench_decode --model $S/$m.gguf --prompt-tokens $n --decode-tokens 128 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $n $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do
  for r in 1 2; do run regs $m 512 OCTO_ATTENTION_REGS=1 OCTO_GEMM_EPI_REGS=1; run attn $m 512 OCTO_ATTENTION_REGS=1 OCTO_GEMM_EPI_REGS=0; run old $m 512 OCTO_ATTENTION_REGS=0 OCTO_GEMM_EPI_REGS=0; done
done
conf gpu_gemm_tiles
# The decode step at 1k context, per opcode (issue 16 item 3's decode attention, <= 5 us a layer).
timeout 60 $N/bench_decode --model $S/qwen2.5-1.5b-q8_0.gguf --prompt-tokens 1024 --decode-tokens 32 --profile > $OUT/decode-profile-1k.txt 2>&1
say "decode profile 1k: $(grep '"profile_opcode","phase":"decode","opcode":"ATTENTION' $OUT/decode-profile-1k.txt | grep -o '"opcode":"[A-Z_]*"\|"us":[0-9.]*' | tr '\n' ' ')"
# The tensor-core GEMM's tile on the narrow 512-row shapes (1.5B k / v: 32 workgroups of 64 x 64 on 132
# SMs): smaller tiles through OCTO_GEMM_COOP=wg,wm,fm,fn (bench_gemm times plain GEMM_TILEs, no epilogue).
for cfg in auto 128,2,1,2 128,1,2,2 128,2,2,2 256,4,1,2; do
  if [ $cfg = auto ]; then unset OCTO_GEMM_COOP; else export OCTO_GEMM_COOP=$cfg; fi
  timeout 100 $N/bench_gemm --models 0.5b,1.5b --tokens 512 --dtypes q8_0 --kernels auto --passes 10 2>>$OUT/log.txt | sed "s/^{/{\"coop\":\"$cfg\",/" >> $OUT/gemm.jsonl
  say "bench_gemm coop=$cfg: $(grep '"coop":"'$cfg'"' $OUT/gemm.jsonl | grep -o '"shape":"[^"]*"\|"model":"[^"]*"\|"tflop_s":[0-9.]*' | tr '\n' ' ')"
done
unset OCTO_GEMM_COOP
say done
