#!/usr/bin/env bash
# The self-regulating VM's costs on the GPU machine (issue 18; docs/vulkan.md "Layer statistics",
# "Control words", "Indirect dispatch"): random Qwen2.5-shaped models (tools/make_bench_models.sh, Q8_0),
# then bench_decode
#   stats:    layer statistics on (the default) against OCTO_LAYER_STATS=0, alternating, 3 rounds each
#   control:  the plain recording, --control-words (nothing skipped) and --skip-layers (the middle layer)
#   at:       decode steps at positions 128 .. 32000 of one recording: the default attention (split-key up
#             to 128 keys, flash-decoding past), split-key alone, flash alone (FLASH_DIRECT=1: also
#             flash with OCTO_INDIRECT=0, the whole cache's workgroups)
#   attention: the default 512-token decode bench, the default attention against split-key alone
#   peer:     llama.cpp's llama-bench -d (decode after a prefilled depth, -fa 0 and 1) beside octo at the
#             same positions (PEER_PACK: the peer's source pack, tools/build_peer.sh --pack-source)
# and the GPU tests that need a device with cooperative matrices to mean everything (gpu_control_words:
# the precision switch runs two kernels only there; gpu_layer_stats).
#
#   [ROUNDS=3] [POSITIONS=128,...,32000] OUT=DIR BIN=DIR TOKENIZER=DIR bash tools/regulation_bench.sh [STEP...]   STEP: models tests stats control at attention peer
# BIN holds bench_decode, octo, gpu_control_words, gpu_layer_stats, qwen_generate (tools/build_for_device.sh).
# The GPU tests read models/tiny-qwen and ../shared/data/stories260K by the paths they were built with;
# link them there first (the GPU machine has neither path).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$root/build/regulation-bench}
BIN=${BIN:-$root/.carry/bin}
TOKENIZER=${TOKENIZER:-$root/.carry/qwen2-tokenizer}
SCRATCH=${SCRATCH:-/tmp/octo-regulation}
ROUNDS=${ROUNDS:-3}        # alternating rounds of the stats and control comparisons
POSITIONS=${POSITIONS:-128,512,1024,2048,4096,8192,16384,32000}
mkdir -p "$OUT" "$SCRATCH"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(models tests stats control at)
log="$OUT/log.txt"
say() { echo "[$(date +%T)] $*" | tee -a "$log" >&2; }

m05="$SCRATCH/qwen2.5-0.5b-q8_0.gguf"
m15="$SCRATCH/qwen2.5-1.5b-q8_0.gguf"
bench() { "$BIN/bench_decode" "$@" 2>>"$log"; }

for step in "${steps[@]}"; do
  case "$step" in
    models)
      say "models"
      bash "$root/tools/make_bench_models.sh" --tokenizer "$TOKENIZER" --shapes 0.5b,1.5b --types q8_0 \
        --scratch "$SCRATCH" --bin "$BIN" --keep --no-bench >>"$log" 2>&1 || say "models failed"
      ls -la "$SCRATCH" >>"$log"
      ;;
    tests)
      for t in gpu_layer_stats gpu_control_words; do
        say "test $t"
        "$BIN/$t" >"$OUT/$t.txt" 2>&1
        echo "rc=$?" >>"$OUT/$t.txt"
        tail -4 "$OUT/$t.txt" >&2
      done
      ;;
    stats)
      for m in "$m05" "$m15"; do
        for round in $(seq "$ROUNDS"); do
          say "stats $(basename "$m") round $round"
          bench --model "$m" --name "stats-on" >>"$OUT/stats.jsonl"
          OCTO_LAYER_STATS=0 bench --model "$m" --name "stats-off" >>"$OUT/stats.jsonl"
        done
      done
      ;;
    control)
      for m in "$m05" "$m15"; do
        for round in $(seq "$ROUNDS"); do
          say "control $(basename "$m") round $round"
          bench --model "$m" --name "plain" >>"$OUT/control.jsonl"
          bench --model "$m" --name "control-words" --control-words >>"$OUT/control.jsonl"
          bench --model "$m" --name "skip-layer-12" --skip-layers 12 >>"$OUT/control.jsonl"
        done
      done
      ;;
    at)
      A=(--ctx 32768 --at-positions "$POSITIONS" --decode-tokens 32 --repeat 1)
      for m in "$m05" "$m15"; do
        say "at $(basename "$m")"
        bench --model "$m" "${A[@]}" --name auto >>"$OUT/at.jsonl"
        OCTO_ATTENTION=split bench --model "$m" "${A[@]}" --name split-key >>"$OUT/at.jsonl"
        OCTO_ATTENTION=flash bench --model "$m" "${A[@]}" --name flash-indirect >>"$OUT/at.jsonl"
        [ "${FLASH_DIRECT:-0}" = 1 ] &&
          OCTO_ATTENTION=flash OCTO_INDIRECT=0 bench --model "$m" "${A[@]}" --name flash-direct >>"$OUT/at.jsonl"
      done
      ;;
    attention)  # the default decode bench (512-token prompt): the default choice against split-key alone
      for m in "$m05" "$m15"; do
        for round in $(seq "$ROUNDS"); do
          say "attention $(basename "$m") round $round"
          bench --model "$m" --name "attention-auto" >>"$OUT/attention.jsonl"
          OCTO_ATTENTION=split bench --model "$m" --name "attention-split" >>"$OUT/attention.jsonl"
        done
      done
      ;;
    peer)  # llama.cpp's decode at depth (llama-bench -d) beside octo's at the same positions, same files
      # PEER_PACK: tools/build_peer.sh --pack-source's tar.xz, built here into /tmp/peer-bin
      if [ ! -x /tmp/peer-bin/llama-bench ]; then
        say "building the peer from ${PEER_PACK:-?}"
        PEER_OUT=/tmp/peer-pack bash "$root/tools/build_peer.sh" --from-pack "$PEER_PACK" >>"$log" 2>&1 || say "peer build failed"
        mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin >>"$log" 2>&1
        find /tmp/peer-bin -name llama-bench -exec ln -sf {} /tmp/peer-bin/llama-bench \; 2>/dev/null
      fi
      for m in "$m05" "$m15"; do
        say "peer depth $(basename "$m")"
        /tmp/peer-bin/llama-bench -m "$m" -ngl 99 -p 0 -n 32 -r "${PEER_REPEAT:-3}" -fa 0,1 -d "${PEER_DEPTHS:-0,4096,16384}" -o jsonl \
          >>"$OUT/peer-depth.jsonl" 2>>"$log"
        bench --model "$m" --ctx 32768 --at-positions "${PEER_DEPTHS_OCTO:-128,4096,16384}" --decode-tokens 32 \
          --repeat 1 --name octo-auto >>"$OUT/peer-depth-octo.jsonl"
      done
      ;;
    *) say "unknown step $step" ;;
  esac
done
say "done"
