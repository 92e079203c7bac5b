#!/usr/bin/env bash
# The pipeline over several GPUs measured (issue 19 item 4, docs/multi-gpu.md), on a machine with two or
# more Vulkan devices: random-weight Qwen2.5-shaped models (tools/make_bench_models.sh), each run by
#   qwen_generate on one GPU (--device 0), on two (--devices 0,1), on two with the prompt in 4
#   micro-batches (--prefill-chunk 128, so both stages work at once), and by the peer, llama-bench
#   with every layer on one GPU (-sm none) and split by layers over all of them (-sm layer),
# a 512-token prompt and 128 generated tokens each, one JSON line per run in OUT/multi-gpu.jsonl.
#
#   tools/multi_gpu_bench.sh --tokenizer DIR --bin DIR --peer-bin DIR [--shapes 7b,14b] [--types q8_0]
#       [--scratch DIR] [--out DIR] [--reps 3]
# --peer-bin: a folder with llama-bench (tools/build_peer.sh). Each run has a time limit; a failing run
# writes {"error": ...} and the next one runs.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tokenizer="" bin="" peer_bin="" shapes="7b,14b" types="q8_0" scratch="${TMPDIR:-/tmp}/octo-multi-gpu" out=. reps=3
while [ $# -gt 0 ]; do
  case "$1" in
    --tokenizer) tokenizer=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --peer-bin) peer_bin=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "multi_gpu_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$tokenizer" ] && [ -n "$bin" ] || { echo "multi_gpu_bench.sh: --tokenizer and --bin are required" >&2; exit 2; }
[ -x "$bin/qwen_generate" ] || { echo "multi_gpu_bench.sh: no qwen_generate in $bin" >&2; exit 2; }
mkdir -p "$out" "$scratch"
jsonl="$out/multi-gpu.jsonl"

# record LABEL CONFIG LIMIT CMD...: the last line of CMD's stdout (a JSON object) with label and config
# added, or an error line.
record() {
  local label=$1 config=$2 limit=$3; shift 3
  local t0 line
  t0=$(date +%s)
  line=$(timeout "$limit" "$@" 2>> "$out/multi-gpu-log.txt" | tail -n 1)
  if [ -n "$line" ] && python3 -c 'import json,sys; json.loads(sys.argv[1])' "$line" 2> /dev/null; then
    python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(json.dumps({"label": sys.argv[2], "config": sys.argv[3], "seconds": int(sys.argv[4]), **o}))' \
      "$line" "$label" "$config" "$(( $(date +%s) - t0 ))" >> "$jsonl"
  else
    echo "{\"label\":\"$label\",\"config\":\"$config\",\"error\":\"no result (exit or time limit after $(( $(date +%s) - t0 )) s)\"}" >> "$jsonl"
  fi
  echo "multi_gpu_bench.sh: $label $config: $(( $(date +%s) - t0 )) s" >&2
}

prompt=$(python3 -c 'print(" ".join(["hello"] * 512))')  # 512 tokens with the Qwen2 tokenizer
for shape in ${shapes//,/ }; do
  bash "$here/make_bench_models.sh" --tokenizer "$tokenizer" --shapes "$shape" --types "$types" --scratch "$scratch" \
    --bin "$bin" --no-bench --keep --convert-log "$out/multi-gpu-convert.jsonl" >&2 || true
  for type in ${types//,/ }; do
    gguf="$scratch/qwen2.5-$shape-$type.gguf"
    label="$shape-$type"
    [ -f "$gguf" ] || { echo "{\"label\":\"$label\",\"error\":\"no model\"}" >> "$jsonl"; continue; }
    gen=("$bin/qwen_generate" -m "$gguf" -p "$prompt" -n 128 --ignore-eos --json)
    record "$label" "octo 1 GPU" 300 "${gen[@]}" --device 0
    record "$label" "octo 2 GPUs" 300 "${gen[@]}" --devices 0,1
    record "$label" "octo 2 GPUs, 4 micro-batches" 300 "${gen[@]}" --devices 0,1 --prefill-chunk 128
    if command -v mpirun > /dev/null; then  # one rank per stage (rank 0 prints)
      record "$label" "octo 2 GPUs, 2 MPI ranks" 300 mpirun --allow-run-as-root --oversubscribe -n 2 "${gen[@]}" --mpi --devices 0,1
    fi
    # The peer may still be building beside the first model (tools/build_peer.sh --from-pack): wait a while.
    for _ in $(seq 60); do [ -z "$peer_bin" ] || [ -x "$peer_bin/llama-bench" ] && break; sleep 5; done
    if [ -n "$peer_bin" ] && [ -x "$peer_bin/llama-bench" ]; then
      for sm in none layer; do
        # llama-bench -o jsonl: one line per test (pp512, tg128), each with avg_ts
        timeout 300 "$peer_bin/llama-bench" -m "$gguf" -ngl 99 -sm "$sm" -p 512 -n 128 -r "$reps" -o jsonl \
          2>> "$out/multi-gpu-log.txt" | while read -r l; do
            python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(json.dumps({"label": sys.argv[2], "config": sys.argv[3], **o}))' \
              "$l" "$label" "peer -sm $sm" >> "$jsonl"
          done
        echo "multi_gpu_bench.sh: $label peer -sm $sm done" >&2
      done
    fi
    rm -f "$gguf"
  done
done
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| model | run | pp512 tok/s | decode tok/s |\n| --- | --- | --- | --- |")
peer = {}
for r in rows:
    if "error" in r:
        print(f"| {r['label']} | {r.get('config', '')} | error: {r['error']} | |"); continue
    if r["config"].startswith("peer"):
        key = (r["label"], r["config"])
        kind = "pp" if r.get("n_prompt", 0) > 0 else "tg"
        peer.setdefault(key, {})[kind] = r.get("avg_ts")
        continue
    s = r.get("summary", r)
    print(f"| {r['label']} | {r['config']} | {s.get('prefill_tok_s', 0):.0f} | {s.get('decode_tok_s', 0):.1f} |")
for (label, config), v in peer.items():
    print(f"| {label} | {config} | {v.get('pp', 0):.0f} | {v.get('tg', 0):.1f} |")
PY
