#!/usr/bin/env bash
# Both engines on one GGUF file (called by tools/make_bench_models.sh --peer-bin after bench_decode):
#   peer-bench.jsonl  llama-bench -p 512 -n 128 -ngl 99 -o jsonl (llama.cpp's Vulkan backend)
#   user.jsonl        qwen_generate with its default options: a 512-token prompt, 128 tokens generated
#                     (--ignore-eos only so that all 128 come), its --json summary
#   answers.jsonl     the first 32 greedy tokens of a fixed prompt from both (tools/peer_answers.py)
#
#   tools/peer_compare.sh --gguf FILE --label L --bin OCTO_BIN_DIR --peer-bin PEER_BIN_DIR --out DIR
#       [--vocab vocab.json] [--hf F16_CHECKPOINT_DIR | --tokenizer HF_TOKENIZER_DIR]   (to peer_answers.py)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gguf="" label="" bin="" peer_bin="" out="" answer_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --gguf) gguf=$2; shift 2 ;;
    --label) label=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --peer-bin) peer_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --vocab|--hf|--tokenizer) answer_args+=("$1" "$2"); shift 2 ;;
    *) echo "peer_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
python=$(command -v python3 || command -v python)
status=0

# The peer's own benchmark, 5 repetitions (llama-bench reports each; the table takes the median: the
# first use of a pipeline on a fresh machine pays the driver's shader compile in one repetition).
t0=$(date +%s)
# A short unrecorded pass first (pipelines built, shaders through the driver), as bench_decode warms up.
timeout 120 "$peer_bin/llama-bench" -m "$gguf" -p 512 -n 16 -ngl 99 -r 1 > /dev/null 2>&1
if ! timeout 180 "$peer_bin/llama-bench" -m "$gguf" -p 512 -n 128 -ngl 99 -r "${PEER_REPS:-5}" -o jsonl \
    >> "$out/peer-bench.jsonl" 2>> "$out/peer-bench-log.txt"; then
  echo "{\"name\":\"peer-bench\",\"label\":\"$label\",\"error\":\"llama-bench failed\"}" >> "$out/peer-bench.jsonl"
  status=1
fi
echo "peer_compare.sh: $label: llama-bench $(( $(date +%s) - t0 )) s" >&2

# What a user gets: qwen_generate's defaults on a 512-token prompt ("hello" + 511 x " hello": one
# token each in the Qwen2 vocabulary; the summary's prompt_tokens says how many it was).
prompt="hello$(printf ' hello%.0s' $(seq 511))"
t0=$(date +%s)
if line=$(timeout 180 "$bin/qwen_generate" --model "$gguf" --prompt "$prompt" -n 128 --ignore-eos --json 2>> "$out/user-log.txt" \
    | grep '"summary"'); then
  echo "{\"name\":\"user\",\"label\":\"$label\",\"model\":\"$(basename "$gguf")\",${line#\{}" >> "$out/user.jsonl"
else
  echo "{\"name\":\"user\",\"label\":\"$label\",\"error\":\"qwen_generate failed\"}" >> "$out/user.jsonl"
  status=1
fi
echo "peer_compare.sh: $label: qwen_generate $(( $(date +%s) - t0 )) s" >&2

t0=$(date +%s)
"$python" "$here/peer_answers.py" --gguf "$gguf" --label "$label" --qwen-generate "$bin/qwen_generate" \
  --llama-completion "$peer_bin/llama-completion" "${answer_args[@]}" >> "$out/answers.jsonl" 2>> "$out/answers-log.txt" || status=1
echo "peer_compare.sh: $label: answers $(( $(date +%s) - t0 )) s" >&2
exit $status
