#!/usr/bin/env bash
# Device call 4 (thirty-seventh session): the register forms with the H100's own factor order. Call 2
# showed the layout probe answering no; call 3 (octo_devices --boot with the probe's elements printed,
# octo_devices_boot.txt) showed why: the 16 x 8 accumulators are in the PTX mma order, a 16 x 16 f16
# factor holds the same elements with its pairs columns first. With that order probed
# (device_facts::coop_factor_order) and used by attention_coop's REGS (spec constant 8), and EPI_REGS
# needing only the accumulators' order: the probe, conformance of both forms on the card against the
# reference VM, the prefill attention per form (--profile), and pp512 with regs / attention only /
# epilogue only / neither, alternating, two rounds, Qwen3-0.6B and Qwen2.5-1.5B Q8_0.
# Binaries: .carry-s37/new.tar.xz (this session's tree); the model maker (octo) and tokenizer in .carry-s37/old.tar.xz, from .carry-s34/new1.tar.xz.
# Run: bash benchmarks/results/2026-12-07-h100-attn-regs/call4.sh   (carry .carry-s37, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
rm -rf /tmp/old /tmp/new; mkdir -p /tmp/old /tmp/new
tar -xJf .carry-s37/old.tar.xz -C /tmp/old; tar -xJf .carry-s37/new.tar.xz -C /tmp/new
O=/tmp/old/bin; N=/tmp/new; T=/tmp/old/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
$N/octo_devices --boot >> $OUT/log.txt 2>&1; say "probe: $(grep -o 'mma layout [0-9]' $OUT/log.txt)"
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $O --keep --no-bench; }
( mk qwen3-0.6b q8_0; mk 1.5b q8_0 ) > $OUT/models-log.txt 2>&1 &
models=$!
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 200 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
conf gpu_conformance -tc="*prefill ATTENTION_TILE*"; conf gpu_conformance_fused -tc="*over many rows*"
wait $models; say "models made"
for m in qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do
  for regs in 1 0; do
    OCTO_ATTENTION_REGS=$regs timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
    a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
    g=$(grep '"profile","phase":"prefill"' /tmp/prof.txt | grep -o '"gpu_us":[0-9.]*')
    echo "$m regs=$regs attention $a prefill $g" >> $OUT/attn-sweep.txt
  done
  say "$m: $(grep $m $OUT/attn-sweep.txt | tr '\n' ';')"
done
for m in qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do
  for r in 1 2; do
    for v in "regs 1 1" "attn 1 0" "epi 0 1" "old 0 0"; do
      read l a e <<< "$v"
      OCTO_ATTENTION_REGS=$a OCTO_GEMM_EPI_REGS=$e timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
      say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
for e in 0 1; do
  OCTO_GEMM_EPI_REGS=$e timeout 60 $N/bench_gemm --models 0.5b,1.5b --tokens 512 --dtypes q8_0 --kernels auto --passes 10 2>>$OUT/log.txt | sed "s/^{/{\"epi_regs\":$e,/" >> $OUT/gemm.jsonl
done
say "bench_gemm: $(grep -o '"epi_regs":[01]\|"model":"[^"]*","tflop_s":[0-9.]*' $OUT/gemm.jsonl | tr '\n' ' ')"
say done
