#!/usr/bin/env bash
# Device call 3: the new flash-decoding kernel (shaders/attention_decode.comp: 64-key chunks, no
# subgroup operations) and the fused GEMVs' sum of squares taken in the main loop: conformance on the
# card, bench_attention (flash against split-key), decode tok/s against the previous build (_old).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
say conformance
timeout 200 $B/gpu_conformance -tc="*decode steps of one recording*,*flash decode attention sized*,*ATTENTION_TILE at decode and prefill*" > $OUT/conformance.txt 2>&1; echo "rc=$?" >> $OUT/conformance.txt
timeout 120 $B/gpu_conformance_fused >> $OUT/conformance.txt 2>&1; echo "rc=$?" >> $OUT/conformance.txt
grep -E "test cases|assertions|rc=" $OUT/conformance.txt | tee -a $OUT/log.txt
say attention
for a in flash split; do
  OCTO_ATTENTION=$a $B/bench_attention --shapes 14x2x64,12x2x128,28x4x128 --ctx 128,1024,4096,32768 --kv-types f16 --passes 20 2>>$OUT/log.txt | sed "s/^{/{\"attention\":\"$a\",/" >> $OUT/attention.jsonl
done
wait
say decode
for r in 1 2; do for m in 0.5b-q8_0 1.5b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] || continue
  $B/bench_decode_old --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "$m old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  for a in auto flash split; do
    OCTO_ATTENTION=$a $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "$m $a" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
done; say "round $r"; done
f=$S/qwen2.5-7b-q8_0.gguf
$B/bench_decode_old --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "7b-q8_0 old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
OCTO_ATTENTION=flash $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "7b-q8_0 flash" >> $OUT/decode.jsonl 2>>$OUT/log.txt
say 7b
m=1.5b-q8_0; OCTO_ATTENTION=flash $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 16 --repeat 1 --profile --name "$m flash" > $OUT/profile-$m.txt 2>&1
say done
