#!/usr/bin/env bash
# Device call 3 (ninth session, H200): where a block-quantized GEMV's time goes, by leaving one part out
# (results wrong; an uncommitted OCTO_GEMV_PROBE spec constant, bench_gemv_probe): 0 the kernel as it is,
# 1 no dequantization (the quant word's bits used as a float), 2 no x loads (x a constant), 3 no weight
# quant loads (Q4_K: the headers still load), 4 (Q4_K) no scale decoding. One process per case. Then a per-task profile of 1.5B Q4_K_M decode (bench_decode --profile).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1 &
for rep in 1 2; do
for c in q4_k:18944x3584 q4_k:3584x18944 q8_0:18944x3584 q4_k:3584x3584; do
  for p in 0 1 2 3 4; do
    dt=${c%%:*}; sz=${c#*:}
    [ $dt = q8_0 ] && [ $p = 4 ] && continue
    echo "{\"probe\":$p,\"dtype\":\"$dt\",\"size\":\"$sz\"}" >> $OUT/probe.jsonl
    OCTO_GEMV_PROBE=$p timeout 30 $B/bench_gemv_probe --dtypes $dt --sizes $sz --passes 30 --chain-mib 256 --bandwidth-gbs 4800 2>>$OUT/log.txt | grep '"tasks":8' >> $OUT/probe.jsonl
  done
done
done
wait
timeout 120 $B/bench_decode --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile.txt 2>&1
echo done
