#!/usr/bin/env bash
# Device call 7 (ninth session, H200): where a prefill's time goes after call6 (bench_decode --profile,
# serialized per-task GPU times) on 0.5B Q8_0, 1.5B Q8_0, 1.5B Q4_K_M and 7B Q4_K_M.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || continue
  timeout 120 $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 16 --profile > $OUT/profile-$m.txt 2>&1
done
wait
echo done
