#!/usr/bin/env bash
# Device call 3: the least of call 2 for a device budget of a few minutes (binaries of 65e8f0d, .carry-s34/new1.tar.xz):
# the layout probe (octo_devices --boot), the prefill attention's conformance on the card (every form,
# REGS on and off) against the reference VM, then on Qwen3-0.6B Q8_0 (made on the device) the prefill
# attention per form (--profile) and pp512 with both register forms against neither, alternating.
# Run: bash benchmarks/results/2026-12-06-h100-attn-regs/call3.sh   (carry .carry-s34, .gl)
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
( bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b --types q8_0 --scratch $S --bin $N --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
models=$!
timeout 120 $N/gpu_conformance -tc="*prefill ATTENTION_TILE*" > $OUT/conf.txt 2>&1; say "gpu_conformance attention exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"
wait $models; say "models made"
m=qwen3-0.6b-q8_0
for f in 64:1:1 64:1:0; do
  IFS=: read rows split regs <<< "$f"
  OCTO_ATTENTION_ROWS=$rows OCTO_ATTENTION_SPLIT=$split OCTO_ATTENTION_REGS=$regs timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
  a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
  say "$m rows:split:regs=$f attention $a"
done
for r in 1 2; do
  for v in "regs 1 1" "old 0 0"; do
    read l a e <<< "$v"
    OCTO_ATTENTION_REGS=$a OCTO_GEMM_EPI_REGS=$e timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
    say "$m 512 $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
  done
done
say done
