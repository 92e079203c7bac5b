#!/usr/bin/env bash
# Device call 3 (thirty-eighth session; calls 1 and 2 found the first forms wrong, unsplit launches too: the split now lives in a module of its own, gemm_coopf_f16_ksplit, and the unsplit modules compile to the same SPIR-V as before it, checked with glslc here): the tensor-core GEMM's K split (gemm_coop KSPLIT; kernels/gemm.cpp
# split_for: grids under 3/4 of a wave of 128 x 128 tiles split each tile's K over 2-8 workgroups, the
# last adding the splits in order). Conformance of the split on the card (gpu_gemm_tiles, every forced
# split and the default's on the 1.5B down shape; gpu_conformance_fused's GEMV_ADD against the reference
# VM), bench_gemm at 512 rows with and without it (OCTO_GEMM_SPLITK=1), pp512 with and without it
# alternating (Qwen3-0.6B, Qwen2.5-0.5B and 1.5B Q8_0), and the peer (llama.cpp 3f545bec Vulkan, built
# here from the pack) in the same run on the same files.
# Binaries: .carry-s38/new.tar.xz (this session's tree: tools/build_for_device.sh, BUILD_DIR=build/device38).
# Run: bash benchmarks/results/2026-12-07-h100-ksplit/call1.sh   (carry .carry-s38, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 270 bash tools/build_peer.sh --from-pack .carry-s38/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s38/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b,0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models made" ) &
models=$!
$N/octo_devices --boot >> $OUT/log.txt 2>&1; say "probe: $(grep -o 'mma layout [0-9]' $OUT/log.txt)"
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 240 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
conf gpu_gemm_tiles -tc="*K split*,*default precision*,*rows rounded once*"
conf gpu_conformance_fused -tc="*K split*,*over many rows*"
if grep -q "failed: [1-9]\|[1-9][0-9]* failed" $OUT/conf.txt; then say "conformance failed: stopping"; kill $peer $models 2>/dev/null; exit 1; fi
for r in 1 2; do
  for s in "" 1; do
    OCTO_GEMM_SPLITK=$s timeout 90 $N/bench_gemm --models 1.5b --tokens 512 --dtypes q8_0 --kernels auto --passes 10 2>>$OUT/log.txt | sed "s/^{/{\"splitk\":\"$s\",\"round\":$r,/" >> $OUT/gemm.jsonl
  done
done
say "bench_gemm: $(grep -o '"splitk":"[0-9]*"\|"model":"[^"]*","dtype":"Q8_0","kernel":"auto","tile":"auto","T":512,"layers":[0-9]*,"gemm_ms_per_prompt":[0-9.]*,"tflop_s":[0-9.]*' $OUT/gemm.jsonl | sed 's/"dtype.*tflop_s"/ /' | tr '\n' ' ')"
wait $models
for r in 1 2; do
  for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
    for s in "" 1; do
      OCTO_GEMM_SPLITK=$s timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"splitk\":\"$s\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m splitk=$s: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
  [ -n "$LB" ] && timeout 40 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 0,1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m: $(grep -o '"n_prompt": [0-9]*, "n_gen": [0-9]*\|"avg_ts": [0-9.]*\|"flash_attn": [a-z0-9]*' $OUT/peer.jsonl | tail -12 | tr '\n' ' ')"
done
say done
