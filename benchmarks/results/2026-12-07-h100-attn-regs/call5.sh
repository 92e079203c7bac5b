#!/usr/bin/env bash
# Device call 5: the softmax in registers at head_dim 64 (Qwen2.5-0.5B Q8_0), where the default splits
# each 16 rows' keys over 2 subgroups (32 rows a workgroup): REGS (unsplit, 64 rows) against it, the
# prefill attention per form (--profile) and pp512 alternating, two rounds. Binaries as call 4.
# Run: bash benchmarks/results/2026-12-07-h100-attn-regs/call5.sh   (carry .carry-s37, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
rm -rf /tmp/old /tmp/new; mkdir -p /tmp/old /tmp/new
tar -xJf .carry-s37/old.tar.xz -C /tmp/old; tar -xJf .carry-s37/new.tar.xz -C /tmp/new
O=/tmp/old/bin; N=/tmp/new; T=/tmp/old/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $O --keep --no-bench > $OUT/models-log.txt 2>&1
say "model made"
m=qwen2.5-0.5b-q8_0
for regs in 1 0; do
  OCTO_ATTENTION_REGS=$regs timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
  a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
  say "$m regs=$regs attention $a $(grep '"profile","phase":"prefill"' /tmp/prof.txt | grep -o '"gpu_us":[0-9.]*')"
done
for r in 1 2 3; do
  for regs in 1 0; do
    OCTO_ATTENTION_REGS=$regs timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"regs\":$regs,/" >> $OUT/decode.jsonl
    say "$m regs=$regs: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
  done
done
say done
