#!/usr/bin/env bash
# Device call 3 (new2's binaries): decode attention's chunk size and workgroup width at a 512-token prompt
# (OCTO_ATTENTION_KEYS=32|64|128, OCTO_ATTENTION_WG=128|256), alternating, two rounds; serialized profiles
# of the attention task for each.
# Run: bash benchmarks/results/2026-12-02-h200-lanes/call3.sh   (carry .carry-s24, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s24
mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
say "models ready"
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
prof() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile 2>&1 | grep '"profile_role","phase":"decode"' | sed "s/^{/{\"v\":\"$l\",\"m\":\"$m\",/" >> $OUT/profile.jsonl
}
for m in 0.5b-q8_0 1.5b-q8_0; do
  for r in 1 2; do
    run default $m; run keys32 $m OCTO_ATTENTION_KEYS=32; run keys128 $m OCTO_ATTENTION_KEYS=128
    run wg128 $m OCTO_ATTENTION_WG=128; run wg256 $m OCTO_ATTENTION_WG=256
  done
  prof default $m; prof keys32 $m OCTO_ATTENTION_KEYS=32; prof keys128 $m OCTO_ATTENTION_KEYS=128
  prof wg128 $m OCTO_ATTENTION_WG=128; prof wg256 $m OCTO_ATTENTION_WG=256
done
say done
