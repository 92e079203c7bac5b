#!/usr/bin/env bash
# Random-weight models of published shapes for the decode benchmark (Qwen2.5 0.5b, 1.5b, 3b, 7b, 14b;
# qwen3-0.6b, -1.7b, -4b, -8b; llama-1b, -8b; tools/make_bench_models.py): for each shape, an HF checkpoint
# (make_bench_models.py, float16, in shards of at most 4 GB), converted by `octo convert` to each GGUF
# type (streamed: memory stays far below the file size; peak RSS and time go to --convert-log),
# benchmarked by bench_decode (one JSON line per model appended to --out), then deleted to keep the
# disk free. Disk needed per shape: the checkpoint plus its largest GGUF (7B: 15.2 + 15.2 GB). Files:
# SCRATCH/qwen2.5-7b-q4_k_m.gguf, SCRATCH/qwen3-8b-q4_k_m.gguf, ...
#
#   tools/make_bench_models.sh --tokenizer DIR [--shapes 0.5b,1.5b] [--types f16,q8_0,q4_k_m]
#       [--scratch DIR] [--bin DIR] [--out FILE.jsonl] [--convert-log FILE.jsonl] [--with-7b]
#       [--bandwidth-gbs 3071] [--keep] [--keep-hf] [--no-bench]
#       [--decode-args "--prompt-tokens 512 --decode-tokens 128"] [--peer-bin DIR --peer-out DIR]
#   --peer-bin: also run llama.cpp (llama-bench, llama-completion in DIR) and qwen_generate on each file
#   (tools/peer_compare.sh: peer-bench.jsonl, user.jsonl, answers.jsonl in --peer-out).
#   --keep-hf: keep the HF checkpoint, and reuse one a previous run finished (a later call on the
#   same machine then skips generating it). --no-bench: convert only (checks the pipeline).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tokenizer="" shapes="0.5b,1.5b" types="f16,q8_0,q4_k_m" scratch="${TMPDIR:-/tmp}/octo-bench-models"
bin="" out="" convert_log="" peer_bin="" peer_out="" bw=3071 keep=0 keep_hf=0 bench_too=1 decode_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tokenizer) tokenizer=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --convert-log) convert_log=$2; shift 2 ;;
    --with-7b) shapes="$shapes,7b"; shift ;;
    --bandwidth-gbs) bw=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --keep-hf) keep_hf=1; shift ;;
    --no-bench) bench_too=0; shift ;;
    --decode-args) decode_args=$2; shift 2 ;;
    --peer-bin) peer_bin=$2; shift 2 ;;
    --peer-out) peer_out=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "make_bench_models.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$tokenizer" ] || { echo "make_bench_models.sh: --tokenizer DIR is required" >&2; exit 2; }
[ -d "$tokenizer" ] || { echo "make_bench_models.sh: --tokenizer: no such folder '$tokenizer'" >&2; exit 2; }
find_bin() {  # $1: binary name; --bin DIR first, then PATH
  if [ -n "$bin" ] && [ -x "$bin/$1" ]; then echo "$bin/$1"; return 0; fi
  command -v "$1" || { echo "make_bench_models.sh: no '$1' (give --bin DIR)" >&2; return 1; }
}
octo=$(find_bin octo) || exit 2
bench=""
[ "$bench_too" = 0 ] || bench=$(find_bin bench_decode) || exit 2
python=$(command -v python3 || command -v python) || { echo "make_bench_models.sh: no python3" >&2; exit 2; }
[ -n "$out" ] || out="$scratch/decode.jsonl"
[ -n "$convert_log" ] || convert_log="${out%.jsonl}-convert.jsonl"
mkdir -p "$scratch" "$(dirname "$out")" "$(dirname "$convert_log")"

# Float16 checkpoint GB per shape, and the free GB a shape needs (checkpoint + F16 GGUF + 5%).
declare -A hf_gb=([tiny]=0.1 [0.5b]=1.0 [1.5b]=3.1 [3b]=6.2 [7b]=15.3 [14b]=29.5 [qwen3-tiny]=0.1 [qwen3-0.6b]=1.2
                  [qwen3-1.7b]=3.5 [qwen3-4b]=8.1 [qwen3-8b]=16.4 [llama-tiny]=0.1 [llama-1b]=2.6 [llama-8b]=16.5
                  [smollm2-135m]=0.4 [smollm2-1.7b]=3.8)
# A shape's files: qwen2.5-SHAPE-TYPE.gguf for the Qwen2.5 sizes, SHAPE-TYPE.gguf for the families that
# name themselves (qwen3-8b, llama-1b).
model_name() { case "$1" in qwen3-*|llama-*|smollm2-*) echo "$1" ;; *) echo "qwen2.5-$1" ;; esac; }
free_gb() { df -Pk "$1" | awk 'NR==2 { printf "%.1f", $4 / 1e6 }'; }

# run_measured LOG_LABEL CMD...: runs CMD (stdout/stderr through), appends {label, seconds, peak RSS}
# to the convert log; the peak comes from the kernel's accounting of the waited-for child.
run_measured() {
  local label=$1; shift
  "$python" - "$label" "$convert_log" "$@" <<'PY'
import json, resource, subprocess, sys, time
label, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.time()
rc = subprocess.call(cmd)
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
with open(log, "a") as f:
    f.write(json.dumps({"name": "convert", "label": label, "seconds": round(time.time() - t0, 1),
                        "peak_rss_mb": round(rss_mb, 1), "exit": rc}) + "\n")
print(f"make_bench_models.sh: {label}: exit {rc}, {time.time() - t0:.1f} s, peak RSS {rss_mb:.0f} MB",
      file=sys.stderr)
sys.exit(rc)
PY
}

# GGUFs (and .tmp files of a conversion killed by a time limit) left by an earlier call hold disk space.
[ "$keep" = 1 ] || rm -f "$scratch"/{qwen2.5,qwen3,llama,smollm2}-*.gguf "$scratch"/{qwen2.5,qwen3,llama,smollm2}-*.gguf.tmp

status=0
for shape in ${shapes//,/ }; do
  if [ -z "${hf_gb[$shape]:-}" ]; then
    echo "make_bench_models.sh: unknown shape '$shape' (known: ${!hf_gb[*]})" >&2
    status=1; continue
  fi
  name=$(model_name "$shape")
  hf="$scratch/$name-hf"
  need=$(awk -v g="${hf_gb[$shape]:-0}" 'BEGIN { printf "%.1f", 2.1 * g }')
  [ -f "$hf/.complete" ] && need=$(awk -v g="${hf_gb[$shape]:-0}" 'BEGIN { printf "%.1f", 1.05 * g }')
  have=$(free_gb "$scratch")
  if awk -v h="$have" -v n="$need" 'BEGIN { exit !(h < n) }'; then
    echo "make_bench_models.sh: $shape needs ${need} GB free in $scratch, only ${have} GB" >&2
    echo "{\"name\":\"decode\",\"label\":\"$shape\",\"error\":\"not enough disk (${have} GB free, ${need} needed)\"}" >> "$out"
    status=1; continue
  fi
  t0=$(date +%s)
  if [ "$keep_hf" = 1 ] && [ -f "$hf/.complete" ]; then
    echo "make_bench_models.sh: reusing the $shape checkpoint in $hf" >&2
  else
    rm -rf "$hf"
    if ! "$python" "$here/make_bench_models.py" "$shape" "$hf" --tokenizer "$tokenizer"; then
      echo "{\"name\":\"decode\",\"label\":\"$shape\",\"error\":\"make_bench_models.py failed\"}" >> "$out"
      rm -rf "$hf"
      status=1; continue
    fi
    touch "$hf/.complete"
    echo "make_bench_models.sh: $shape checkpoint in $(( $(date +%s) - t0 )) s" >&2
  fi
  for type in ${types//,/ }; do
    gguf="$scratch/$name-$type.gguf"
    if ! run_measured "$shape-$type" "$octo" convert "$hf" "$gguf" --type "$type" --name "$name-random" >&2; then
      echo "{\"name\":\"decode\",\"label\":\"$shape-$type\",\"error\":\"octo convert failed\"}" >> "$out"
      status=1; continue
    fi
    echo "make_bench_models.sh: $gguf ($(du -h "$gguf" | cut -f1))" >&2
    # shellcheck disable=SC2086  # decode_args is a list of options
    if [ -n "$bench" ] && ! "$bench" --model "$gguf" --name "$shape-$type" --bandwidth-gbs "$bw" $decode_args >> "$out"; then
      echo "{\"name\":\"decode\",\"label\":\"$shape-$type\",\"error\":\"bench_decode failed\"}" >> "$out"
      status=1
    fi
    # The F16 file holds the checkpoint's weights exactly: its checkpoint is the float32 arbiter. A
    # quantized file's arbiter is its own weights dequantized (tools/gguf_reference.py).
    ref=(--tokenizer "$tokenizer")
    [ "$type" = f16 ] && ref=(--hf "$hf")
    if [ -n "$peer_bin" ] && ! bash "$here/peer_compare.sh" --gguf "$gguf" --label "$shape-$type" --bin "$(dirname "$octo")" \
        --peer-bin "$peer_bin" --out "${peer_out:-$(dirname "$out")}" --vocab "$tokenizer/vocab.json" "${ref[@]}"; then
      status=1
    fi
    [ "$keep" = 1 ] || rm -f "$gguf"
  done
  [ "$keep" = 1 ] || [ "$keep_hf" = 1 ] || rm -rf "$hf"
done
exit $status
