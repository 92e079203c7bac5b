#!/usr/bin/env bash
# Random-weight Qwen2.5-shaped models for the decode benchmark: for each shape, an HF checkpoint
# (make_bench_models.py), converted by `octo convert` to each GGUF type, benchmarked by bench_decode
# (one JSON line per model appended to OUT_JSONL), then deleted to keep the disk free.
#
#   tools/make_bench_models.sh --tokenizer DIR [--shapes 0.5b,1.5b] [--types f16,q8_0,q4_k]
#       [--scratch DIR] [--bin DIR] [--out FILE.jsonl] [--with-7b] [--bandwidth-gbs 3071] [--keep]
#       [--decode-args "--prompt-tokens 512 --decode-tokens 128"]
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tokenizer="" shapes="0.5b,1.5b" types="f16,q8_0,q4_k" scratch="${TMPDIR:-/tmp}/octo-bench-models"
bin="" out="" bw=3071 keep=0 decode_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tokenizer) tokenizer=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --with-7b) shapes="$shapes,7b"; shift ;;
    --bandwidth-gbs) bw=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --decode-args) decode_args=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
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
bench=$(find_bin bench_decode) || exit 2
python=$(command -v python3 || command -v python) || { echo "make_bench_models.sh: no python3" >&2; exit 2; }
[ -n "$out" ] || out="$scratch/decode.jsonl"
mkdir -p "$scratch" "$(dirname "$out")"

status=0
for shape in ${shapes//,/ }; do
  hf="$scratch/qwen2.5-$shape-hf"
  t0=$(date +%s)
  if ! "$python" "$here/make_bench_models.py" "$shape" "$hf" --tokenizer "$tokenizer"; then
    echo "{\"name\":\"decode\",\"label\":\"$shape\",\"error\":\"make_bench_models.py failed\"}" >> "$out"
    status=1; continue
  fi
  echo "make_bench_models.sh: $shape checkpoint in $(( $(date +%s) - t0 )) s" >&2
  for type in ${types//,/ }; do
    gguf="$scratch/qwen2.5-$shape-$type.gguf"
    t0=$(date +%s)
    if ! "$octo" convert "$hf" "$gguf" --type "$type" --name "qwen2.5-$shape-random" >&2; then
      echo "{\"name\":\"decode\",\"label\":\"$shape-$type\",\"error\":\"octo convert failed\"}" >> "$out"
      status=1; continue
    fi
    echo "make_bench_models.sh: $gguf ($(du -h "$gguf" | cut -f1)) in $(( $(date +%s) - t0 )) s" >&2
    # shellcheck disable=SC2086  # decode_args is a list of options
    if ! "$bench" --model "$gguf" --name "$shape-$type" --bandwidth-gbs "$bw" $decode_args >> "$out"; then
      echo "{\"name\":\"decode\",\"label\":\"$shape-$type\",\"error\":\"bench_decode failed\"}" >> "$out"
      status=1
    fi
    [ "$keep" = 1 ] || rm -f "$gguf"
  done
  [ "$keep" = 1 ] || rm -rf "$hf"
done
exit $status
