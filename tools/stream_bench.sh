#!/usr/bin/env bash
# Layer streaming on the GPU machine (issue 8): for each type, the Qwen2.5-shaped GGUF (reused from
# SCRATCH, else converted from the kept HF checkpoint, else made), then bench_stream under a VRAM budget
#   ram:  from the GGUF, every streamed layer kept in pinned RAM (uploads bound by PCIe)
#   disk: from a decomposed directory (octo decompose), layers read with O_DIRECT every pass
# One JSON line per run appended to --out. Called by tools/h100_bench.sh's "stream" step.
#
#   tools/stream_bench.sh --tokenizer DIR --bin DIR --scratch DIR --out FILE.jsonl [--shape 7b]
#       [--types f16,q4_k_m] [--budget 4GiB] [--modes ram,disk] [--keep] [--quick]
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tokenizer="" bin="" scratch="${TMPDIR:-/tmp}/octo-bench" out="" shape=7b types="f16,q4_k_m" budget=4GiB
modes="ram,disk" keep=0 quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tokenizer) tokenizer=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "stream_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$tokenizer" ] && [ -n "$bin" ] && [ -n "$out" ] || { echo "stream_bench.sh: --tokenizer, --bin and --out are required" >&2; exit 2; }
python=$(command -v python3 || command -v python) || { echo "stream_bench.sh: no python3" >&2; exit 2; }
mkdir -p "$scratch" "$(dirname "$out")"

# decode: 32 tokens from RAM; from disk each token reads every streamed layer (~12 GB for 7B F16 at
# ~1.4 GB/s), so 4 tokens and one timed run. --quick: a smoke test on lavapipe with every layer streamed.
ram_args=(--decode-tokens 32 --repeat 2)
disk_args=(--decode-tokens 4 --repeat 1 --no-baseline)
size_args=(--vram-budget "$budget")
if [ "$quick" = 1 ]; then
  ram_args=(--prompt-tokens 16 --decode-tokens 4 --repeat 1 --bandwidth-mib 4)
  disk_args=("${ram_args[@]}" --no-baseline)
  size_args=(--resident-layers 0)
fi

status=0
for type in ${types//,/ }; do
  gguf="$scratch/qwen2.5-$shape-$type.gguf"
  dir="$scratch/qwen2.5-$shape-$type.octo"
  if [ ! -f "$gguf" ]; then
    hf="$scratch/qwen2.5-$shape-hf"
    if [ ! -f "$hf/config.json" ]; then
      "$python" "$here/make_bench_models.py" "$shape" "$hf" --tokenizer "$tokenizer" ||
        { echo "{\"name\":\"stream\",\"label\":\"$shape-$type\",\"error\":\"make_bench_models.py failed\"}" >> "$out"; status=1; continue; }
    fi
    "$bin/octo" convert "$hf" "$gguf" --type "$type" --name "qwen2.5-$shape-random" >&2 ||
      { echo "{\"name\":\"stream\",\"label\":\"$shape-$type\",\"error\":\"octo convert failed\"}" >> "$out"; status=1; continue; }
  fi
  for mode in ${modes//,/ }; do
    if [ "$mode" = ram ]; then
      "$bin/bench_stream" --model "$gguf" --tier ram "${size_args[@]}" --name "$shape-$type-gguf-ram" "${ram_args[@]}" >> "$out" ||
        { echo "{\"name\":\"stream\",\"label\":\"$shape-$type-gguf-ram\",\"error\":\"bench_stream failed\"}" >> "$out"; status=1; }
    elif [ "$mode" = disk ]; then
      if [ ! -f "$dir/manifest.json" ]; then
        "$bin/octo" decompose "$gguf" "$dir" --quiet >&2 ||
          { echo "{\"name\":\"stream\",\"label\":\"$shape-$type-dir-disk\",\"error\":\"octo decompose failed\"}" >> "$out"; status=1; continue; }
      fi
      "$bin/bench_stream" --model "$dir" --tier disk "${size_args[@]}" --name "$shape-$type-dir-disk" "${disk_args[@]}" >> "$out" ||
        { echo "{\"name\":\"stream\",\"label\":\"$shape-$type-dir-disk\",\"error\":\"bench_stream failed\"}" >> "$out"; status=1; }
    else
      echo "stream_bench.sh: unknown mode '$mode' (ram, disk)" >&2; status=1
    fi
  done
  [ "$keep" = 1 ] || rm -rf "$gguf" "$dir"  # the disk holds ~64 GB: the 7B F16 GGUF and its directory are 15 GB each
done
exit $status
