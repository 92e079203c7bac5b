#!/usr/bin/env bash
# Device call 2: gemm_coopf with K steps of 16 (OCTO_GEMM_BK=16), which lets 8 subgroups of 4 x 8
# fragments (a 128 x 256 or 256 x 128 tile) fit the 48 KiB of shared memory double-buffered; bench_gemm
# over the 1.5B / 7B shapes at 512 rows, and gpu_gemm_tiles under the forced configurations.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
for cfg in auto 32:256,2,4,4 16:256,2,4,4 16:256,2,4,8 16:256,4,4,8 16:256,2,8,4 16:256,4,2,8; do
  if [ $cfg = auto ]; then unset OCTO_GEMM_COOP OCTO_GEMM_BK; else export OCTO_GEMM_BK=${cfg%%:*} OCTO_GEMM_COOP=${cfg#*:}; fi
  timeout 60 $B/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto --passes 10 \
    | sed "s/^{/{\"cfg\":\"$cfg\",/" >> $OUT/gemm.jsonl 2>>$OUT/log.txt
  say "gemm $cfg"
done
for cfg in 16:256,2,4,8 16:256,4,4,8; do
  export OCTO_GEMM_BK=${cfg%%:*} OCTO_GEMM_COOP=${cfg#*:}
  timeout 200 $B/gpu_gemm_tiles > $OUT/gemm_tiles-${cfg%%:*}-${cfg#*:}.txt 2>&1; echo "rc=$?" >> $OUT/gemm_tiles-${cfg%%:*}-${cfg#*:}.txt
  say "tiles $cfg $(tail -3 $OUT/gemm_tiles-${cfg%%:*}-${cfg#*:}.txt | tr '\n' ' ')"
done
say done
# The streamed 7B F16 prefill (2048 tokens): call1 ran 355 ms against 273 resident and 264 of uploads.
# Ring depth and budget: does a third slot hide the uploads?
unset OCTO_GEMM_BK OCTO_GEMM_COOP
T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
f=$S/qwen2.5-7b-f16.gguf
for v in "4GiB 2" "6GiB 3" "6GiB 2" "8GiB 4"; do
  set -- $v
  timeout 120 $B/bench_stream --model $f --vram-budget $1 --ring $2 --prompt-tokens 2048 --decode-tokens 4 --repeat 2 --name "$1 ring $2" >> $OUT/stream.jsonl 2>>$OUT/log.txt
  say "stream $v"
done
say done
