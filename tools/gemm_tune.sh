#!/usr/bin/env bash
# Tuning the tensor-core prefill GEMM (shaders/gemm_coop.comp, src/vulkan/kernels/gemm.cpp) on the GPU
# machine: random Qwen2.5-shaped models (tools/make_bench_models.sh), the GEMM conformance cases, then
# bench_decode's pp512 (512-token prompt in one pass) under each setting of CONFIGS, alternating with a
# baseline binary (OLD_BENCH, e.g. the previous build's bench_decode) in the same call.
#
#   OUT=DIR BIN=DIR TOKENIZER=DIR [MODELS=0.5b-q8_0,1.5b-q8_0] [CONFIGS="default|OCTO_GEMM_COOP=256,2,4,4 ..."]
#     [OLD_BENCH=FILE] [ROUNDS=2] [PEER_PACK=FILE] bash tools/gemm_tune.sh [models] [tests] [sweep] [profile] [peer]
# profile: bench_decode --profile under each of CONFIGS; profile.jsonl holds the prefill's GPU time per
# role (opcode and output without its layer), so each weight shape's time under each setting shows.
# peer: llama.cpp (built from PEER_PACK on first use) pp512 beside octo's default, alternating: peer.jsonl.
# CONFIGS: space-separated; each is "default" or comma-free VAR=VALUE pairs joined by '+'
# (e.g. OCTO_GEMM_MIN_GROUPS=64+OCTO_GEMM_BK=64). Results: sweep.jsonl, profile-*.txt, log.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gemm-tune}
BIN=${BIN:-$root/.carry/bin}
TOKENIZER=${TOKENIZER:-$root/.carry/qwen2-tokenizer}
SCRATCH=${SCRATCH:-/tmp/octo-gemm-tune}
MODELS=${MODELS:-0.5b-q8_0,1.5b-q8_0}
CONFIGS=${CONFIGS:-default}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT" "$SCRATCH"
log="$OUT/log.txt"
say() { echo "[$(date +%T)] $*" | tee -a "$log" >&2; }
model_file() { echo "$SCRATCH/qwen2.5-${1%%-*}-${1#*-}.gguf"; }
A=(--prompt-tokens 512 --decode-tokens 8 --repeat 3)

for step in "$@"; do
  case "$step" in
    models)
      for m in ${MODELS//,/ }; do
        [ -f "$(model_file "$m")" ] && continue
        say "make $m"
        bash "$root/tools/make_bench_models.sh" --tokenizer "$TOKENIZER" --shapes "${m%%-*}" --types "${m#*-}" \
          --scratch "$SCRATCH" --bin "$BIN" --keep --keep-hf --no-bench >>"$log" 2>&1 || say "make $m failed"
      done
      ls -la "$SCRATCH" >>"$log"
      ;;
    tests)  # the GEMM kernels against float64 (every configuration), the precision contract (BIN has them)
      for t in gpu_gemm_tiles gpu_prefill_head; do
        [ -x "$BIN/$t" ] || continue
        say "$t"
        timeout 300 "$BIN/$t" >"$OUT/$t.txt" 2>&1
        echo "rc=$?" >>"$OUT/$t.txt"
        tail -3 "$OUT/$t.txt" >&2
      done
      ;;
    sweep)
      for round in $(seq "$ROUNDS"); do
        for m in ${MODELS//,/ }; do
          f=$(model_file "$m")
          [ -f "$f" ] || continue
          if [ -n "${OLD_BENCH:-}" ]; then
            say "sweep $m old round $round"
            "$OLD_BENCH" --model "$f" "${A[@]}" --name "$m old" >>"$OUT/sweep.jsonl" 2>>"$log"
          fi
          for c in $CONFIGS; do
            say "sweep $m $c round $round"
            envs=()
            [ "$c" = default ] || IFS='+' read -r -a envs <<<"$c"
            env "${envs[@]}" "$BIN/bench_decode" --model "$f" "${A[@]}" --name "$m $c" >>"$OUT/sweep.jsonl" 2>>"$log"
          done
        done
      done
      python3 - "$OUT/sweep.jsonl" <<'PY' | tee -a "$log"
import json, sys, collections
r = collections.defaultdict(list)
for l in open(sys.argv[1]):
    try: d = json.loads(l)
    except Exception: continue
    if d.get("name") == "decode": r[d["label"]].append(d["prefill_tok_s"])
for k, v in r.items(): print(f"{k:60s} " + " ".join(f"{x:9.0f}" for x in v))
PY
      ;;
    profile)  # GPU time per task (serialized) under each of CONFIGS: profile.jsonl, one line per role
      for m in ${MODELS//,/ }; do
        f=$(model_file "$m")
        [ -f "$f" ] || continue
        for c in $CONFIGS; do
          say "profile $m $c"
          envs=()
          [ "$c" = default ] || IFS='+' read -r -a envs <<<"$c"
          env "${envs[@]}" "$BIN/bench_decode" --model "$f" "${A[@]}" --name "$m $c" --profile 2>>"$log" |
            python3 -c '
import json, sys
label = sys.argv[1]
for l in sys.stdin:
    try: d = json.loads(l)
    except Exception: continue
    if d.get("name") in ("decode", "profile_role", "profile") and d.get("phase", "prefill") == "prefill":
        d["config"] = label
        print(json.dumps(d))' "$m $c" >>"$OUT/profile.jsonl"
        done
      done
      ;;
    peer)  # llama.cpp's pp512 (llama-bench -p 512 -n 0, -fa 0 and 1) beside octo's, same files, alternating
      # PEER_PACK: tools/build_peer.sh --pack-source's tar.xz, built here into /tmp/peer-bin
      if [ ! -x /tmp/peer-bin/llama-bench ]; then
        say "building the peer from ${PEER_PACK:-?}"
        PEER_OUT=/tmp/peer-pack bash "$root/tools/build_peer.sh" --from-pack "$PEER_PACK" >>"$log" 2>&1 || say "peer build failed"
        mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin >>"$log" 2>&1
        find /tmp/peer-bin -name llama-bench -exec ln -sf {} /tmp/peer-bin/llama-bench \; 2>/dev/null
      fi
      for round in $(seq "$ROUNDS"); do
        for m in ${MODELS//,/ }; do
          f=$(model_file "$m")
          [ -f "$f" ] || continue
          say "peer $m round $round"
          /tmp/peer-bin/llama-bench -m "$f" -ngl 99 -p 512 -n 0 -r 3 -fa 0,1 -o jsonl >>"$OUT/peer.jsonl" 2>>"$log"
          "$BIN/bench_decode" --model "$f" "${A[@]}" --name "$m default" >>"$OUT/sweep.jsonl" 2>>"$log"
        done
      done
      python3 - "$OUT/peer.jsonl" "$OUT/sweep.jsonl" <<'PY' | tee -a "$log"
import json, sys, collections
peer = collections.defaultdict(list)
for l in open(sys.argv[1]):
    try: d = json.loads(l)
    except Exception: continue
    if d.get("n_prompt") == 512: peer[d["model_filename"].split("qwen2.5-")[-1].replace(".gguf", "")].append(d["avg_ts"])
octo = collections.defaultdict(list)
for l in open(sys.argv[2]):
    try: d = json.loads(l)
    except Exception: continue
    if d.get("name") == "decode" and d["label"].endswith(" default"): octo[d["label"].split()[0]].append(d["prefill_tok_s"])
for m in octo:
    if m in peer:
        o, p = max(octo[m]), max(peer[m])
        print(f"{m:12s} pp512 octo {o:8.0f} (best of {len(octo[m])})  peer {p:8.0f} (best of {len(peer[m])}, -fa 0/1)  ratio {o / p:5.2f}")
PY
      ;;
    *) say "unknown step $step" ;;
  esac
done
