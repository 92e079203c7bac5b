#!/usr/bin/env bash
# The benchmark run on the GPU machine, from the checkout root, with the binaries built by
# tools/build_for_device.sh in .carry/bin/, the tokenizer in .carry/qwen2-tokenizer and the Vulkan
# loader packages in .gl/. Each step writes into $OUT; a failing step is logged and the next one runs.
#
#   bash tools/h100_bench.sh [STEP...]      STEP: env conformance dispatch gemv gemm decode decode7b
#                                            convert7b kernels
#                                            (default: env conformance dispatch gemv decode)
#   decode:    Qwen2.5-0.5B and 1.5B shapes x F16, Q8_0, Q4_K_M (512-token prefill, 128 decode)
#   decode7b:  the 7B shape x the same types; the 15 GB checkpoint stays in BENCH_SCRATCH, so a later
#              call on the same (still warm) machine reuses it: split as
#              BENCH_TYPES=f16 ... decode7b, then BENCH_TYPES=q8_0,q4_k_m ... decode7b
#   convert7b: the 7B checkpoint converted to each type without benchmarking (times, peak RSS)
#   stream:    layer streaming (tools/stream_bench.sh -> stream.jsonl): the 7B shape x BENCH_TYPES (default
#              f16,q4_k_m) under STREAM_BUDGET (default 4GiB), from the GGUF with every streamed layer in
#              pinned RAM, and from a decomposed directory read with O_DIRECT; reuses the checkpoint
#              decode7b / convert7b kept. Split as BENCH_TYPES=f16 ... stream, BENCH_TYPES=q4_k_m ... stream
#   peer:      both engines on the same files (Qwen2.5 0.5B and 1.5B x F16, Q8_0, Q4_K_M): bench_decode,
#              llama.cpp's llama-bench -p 512 -n 128 -ngl 99, qwen_generate's defaults (512-token prompt,
#              128 generated) and 32 greedy tokens from both (tools/peer_compare.sh); then
#              python3 tools/peer_table.py $OUT writes peer-table.md / peer-table.jsonl.
#   peer7b:    the same for the 7B shape (BENCH_TYPES, default q4_k_m,q8_0; the checkpoint is kept), then
#              llama.cpp's partial offload (-ngl N at STREAM_BUDGET of layers) beside octo's streaming
#              (qwen_generate --vram-budget STREAM_BUDGET) on the last file -> offload.jsonl
#              The peer's binaries: PEER_BIN (default .carry/peer, or beside BENCH_BIN) holding
#              llama-bench and llama-completion or peer.tar.xz (tools/build_peer.sh), else built there
#              from peer-src.tar.xz (tools/build_peer.sh --pack-source) into /tmp/peer-bin.
#   RESULTS_MAX_FILES=8 (on the device): more files than that leave as one results.tar.gz.
#   BENCH_QUICK=1: tiny sizes (a smoke test on lavapipe). BANDWIDTH_GBS (default 3071: H100 HBM read).
#   BENCH_SHAPES / BENCH_TYPES override the decode steps' models (e.g. BENCH_TYPES=q4_k_m ... decode7b);
#   DECODE_ARGS adds bench_decode arguments to them (e.g. DECODE_ARGS=--host-loop, or "--profile").
#   One device call has 600 s: run "env conformance dispatch gemv", "decode" and "decode7b" as separate
#   calls. Results: decode.jsonl (bench_decode), decode-convert.jsonl (octo convert time, peak RSS).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
OUT=${OUT:-$root/build/h100-bench-out}
mkdir -p "$OUT"
bin=${BENCH_BIN:-$root/.carry/bin}
tokenizer=${BENCH_TOKENIZER:-$root/.carry/qwen2-tokenizer}
scratch=${BENCH_SCRATCH:-/tmp/octo-bench}
bw=${BANDWIDTH_GBS:-3071}
quick=${BENCH_QUICK:-0}
log="$OUT/log.txt"
peer_bin=${PEER_BIN:-$(dirname "$bin")/peer}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(env conformance dispatch gemv decode)

# The Vulkan loader (the GPU machine has only the NVIDIA driver); skipped where one is installed
# already (the build machine) or there is no .gl/.
if ! ldconfig -p | grep -q 'libvulkan\.so\.1 ' && compgen -G ".gl/*.deb" > /dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$nv_icd" ] && export VK_DRIVER_FILES=$nv_icd

# run_step NAME TIMEOUT_S OUTFILE CMD...: stdout to OUTFILE, stderr to the log, never aborts the script.
run_step() {
  local name=$1 limit=$2 file=$3; shift 3
  local t0 rc
  t0=$(date +%s)
  echo "=== $name: $*" >> "$log"
  timeout "$limit" "$@" >> "$file" 2>> "$log"
  rc=$?
  echo "=== $name: exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$log" >&2
  return 0
}

# ensure_peer: llama-bench and llama-completion in $peer_bin, unpacked or built there when needed.
ensure_peer() {
  [ -x "$peer_bin/llama-bench" ] && [ -x "$peer_bin/llama-completion" ] && return 0
  if [ -f "$peer_bin/peer.tar.xz" ]; then
    mkdir -p /tmp/peer-bin && tar -C /tmp/peer-bin -xJf "$peer_bin/peer.tar.xz" && peer_bin=/tmp/peer-bin
  elif [ -x /tmp/peer-bin/llama-bench ]; then
    peer_bin=/tmp/peer-bin
  elif [ -f "$(dirname "$peer_bin")/peer-src.tar.xz" ] || [ -f "$peer_bin/peer-src.tar.xz" ]; then
    local pack
    pack="$(dirname "$peer_bin")/peer-src.tar.xz"
    [ -f "$pack" ] || pack="$peer_bin/peer-src.tar.xz"
    run_step peer-build 480 "$OUT/peer-build-log.txt" env PEER_OUT=/tmp/peer-bin bash tools/build_peer.sh --from-pack "$pack"
    peer_bin=/tmp/peer-bin
  fi
  [ -f "$peer_bin/peer.json" ] && cp "$peer_bin/peer.json" "$OUT/peer.json"
  [ -x "$peer_bin/llama-bench" ] || { echo "h100_bench.sh: no llama-bench in $peer_bin" | tee -a "$log" >&2; return 1; }
}

for step in "${steps[@]}"; do
  case "$step" in
    env)
      { date -u; uname -a; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
          --format=csv 2>&1; "$bin/octo_devices" --boot 2>&1; } > "$OUT/env.txt" ;;
    conformance)
      for t in gpu_conformance gpu_conformance_gemv gpu_conformance_fused; do  # the three parts of the cases
        run_step "$t" 240 "$OUT/$t.txt" "$bin/$t"
      done ;;
    dispatch)
      if [ "$quick" = 1 ]; then run_step dispatch 60 "$OUT/dispatch.jsonl" "$bin/bench_vm_dispatch" --tasks 16,64 --passes 5
      else run_step dispatch 90 "$OUT/dispatch.jsonl" "$bin/bench_vm_dispatch" --tasks 64,256,1024,4096 --passes 50; fi ;;
    gemv)
      if [ "$quick" = 1 ]; then run_step gemv 120 "$OUT/gemv.jsonl" "$bin/bench_gemv_bandwidth" --quick
      else run_step gemv 200 "$OUT/gemv.jsonl" "$bin/bench_gemv_bandwidth" --bandwidth-gbs "$bw" --chain-mib 256 --passes 100; fi ;;
    gemm)
      # GEMM_TILE for prefill (benchmarks/gemm): the planner's kernel beside the first 64x64 one.
      # GEMM_ARGS overrides the arguments (e.g. "--models 7b --kernels reg,coop").
      if [ "$quick" = 1 ]; then run_step gemm 120 "$OUT/gemm.jsonl" "$bin/bench_gemm" --quick
      else run_step gemm 200 "$OUT/gemm.jsonl" "$bin/bench_gemm" ${GEMM_ARGS:-}; fi ;;
    kernels)
      # Decode-step kernels besides the GEMVs (benchmarks/kernels): attention over kv lengths, norms,
      # RoPE, argmax over the vocabulary... KERNELS_ARGS overrides the arguments.
      if [ "$quick" = 1 ]; then run_step kernels 120 "$OUT/kernels.jsonl" "$bin/bench_kernels" --quick
      else run_step kernels 200 "$OUT/kernels.jsonl" "$bin/bench_kernels" ${KERNELS_ARGS:-}; fi ;;
    decode|decode7b|convert7b)
      shapes="0.5b,1.5b" types="f16,q8_0,q4_k_m" args="" limit=420 extra=()
      [ "$step" != decode ] && shapes="7b" limit=570 extra=(--keep-hf)
      [ "$step" = convert7b ] && extra+=(--no-bench)
      shapes=${BENCH_SHAPES:-$shapes} types=${BENCH_TYPES:-$types} args=${DECODE_ARGS:-$args}
      if [ "$quick" = 1 ]; then shapes="tiny" types="f16,q8_0,q4_k_m" args="--prompt-tokens 16 --decode-tokens 8 --repeat 1" limit=300; fi
      { df -h "$(dirname "$scratch")"; free -g; } >> "$log" 2>&1
      run_step "$step" "$limit" "$log" bash tools/make_bench_models.sh --tokenizer "$tokenizer" --shapes "$shapes" \
        --types "$types" --scratch "$scratch" --bin "$bin" --out "$OUT/decode.jsonl" --bandwidth-gbs "$bw" \
        --convert-log "$OUT/decode-convert.jsonl" --decode-args "$args" "${extra[@]}" ;;
    peer|peer7b)
      ensure_peer || continue
      shapes="0.5b,1.5b" types="f16,q8_0,q4_k_m" limit=500 extra=()
      [ "$step" = peer7b ] && shapes="7b" types="q4_k_m,q8_0" limit=540 extra=(--keep-hf --keep)
      shapes=${BENCH_SHAPES:-$shapes} types=${BENCH_TYPES:-$types} args=""
      if [ "$quick" = 1 ]; then shapes="tiny" args="--prompt-tokens 16 --decode-tokens 8 --repeat 1" limit=300; fi
      { df -h "$(dirname "$scratch")"; free -g; } >> "$log" 2>&1
      run_step "$step" "$limit" "$log" bash tools/make_bench_models.sh --tokenizer "$tokenizer" --shapes "$shapes" \
        --types "$types" --scratch "$scratch" --bin "$bin" --out "$OUT/decode.jsonl" --bandwidth-gbs "$bw" \
        --convert-log "$OUT/decode-convert.jsonl" --decode-args "$args" --peer-bin "$peer_bin" --peer-out "$OUT" "${extra[@]}"
      if [ "$step" = peer7b ]; then
        last="$scratch/qwen2.5-7b-${types##*,}.gguf"
        [ -f "$last" ] && run_step offload 150 "$OUT/offload.jsonl" python3 tools/peer_offload.py --gguf "$last" \
          --qwen-generate "$bin/qwen_generate" --llama-bench "$peer_bin/llama-bench" --budget "${STREAM_BUDGET:-4GiB}"
        rm -f "$scratch"/qwen2.5-7b-*.gguf
      fi
      python3 tools/peer_table.py "$OUT" --bandwidth-gbs "$bw" >> "$log" 2>&1 ;;
    stream)
      stypes=${BENCH_TYPES:-f16,q4_k_m} sshape=7b sextra=()
      [ "$quick" = 1 ] && sshape=tiny stypes=${BENCH_TYPES:-f16} sextra=(--quick)
      { df -h "$(dirname "$scratch")"; free -g; } >> "$log" 2>&1
      run_step stream 580 "$log" bash tools/stream_bench.sh --tokenizer "$tokenizer" --bin "$bin" --scratch "$scratch" \
        --out "$OUT/stream.jsonl" --shape "$sshape" --types "$stypes" --budget "${STREAM_BUDGET:-4GiB}" "${sextra[@]}" ;;
    *) echo "h100_bench.sh: unknown step '$step' (env conformance dispatch gemv gemm decode decode7b convert7b kernels stream peer peer7b)" | tee -a "$log" >&2 ;;
  esac
done
# RESULTS_MAX_FILES=N (the device tool brings back at most 8 files from $OUT): where the steps wrote more,
# they go back as one archive, results.tar.gz, beside log.txt.
max_files=${RESULTS_MAX_FILES:-0}
n_files=$(find "$OUT" -type f | wc -l)
if [ "$max_files" -gt 0 ] && [ "$n_files" -gt "$max_files" ]; then
  tar -C "$OUT" --exclude=./log.txt -czf /tmp/h100-bench-results.tar.gz . &&
    find "$OUT" -mindepth 1 ! -name log.txt -delete && mv /tmp/h100-bench-results.tar.gz "$OUT/results.tar.gz"
  echo "h100_bench.sh: $n_files files, more than RESULTS_MAX_FILES=$max_files: packed into results.tar.gz" | tee -a "$log" >&2
fi
echo "h100_bench.sh: results in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')" >&2
