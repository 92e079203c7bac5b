#!/bin/sh
# `mpirun -n 2 qwen_generate --mpi` (one pipeline stage per rank) prints what one process prints: the same
# token records (rank 0 alone prints) and the same prompt logits, byte for byte; tiny-qwen on the Vulkan
# VM (lavapipe in CI) and stories260K on the reference VM. A rank that fails ends both, in bounded time.
# usage: mpi_test.sh QWEN_GENERATE SOURCE_DIR "MPIRUN -n 2 ..."
exe="$1"
source_dir="$2"
mpirun="$3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

same_as_one_process() {  # name ARGS...
  name="$1"
  shift
  "$exe" "$@" --json --dump-logits "$tmp/one.npy" >"$tmp/one.jsonl" 2>"$tmp/one.err"
  timeout 300 $mpirun "$exe" --mpi "$@" --json --dump-logits "$tmp/two.npy" >"$tmp/two.jsonl" 2>"$tmp/two.err"
  rc=$?
  if [ $rc -ne 0 ] || [ "$(grep -c '"id"' "$tmp/one.jsonl")" -lt 8 ] ||
     [ "$(grep -v summary "$tmp/one.jsonl")" != "$(grep -v summary "$tmp/two.jsonl")" ] ||
     ! cmp -s "$tmp/one.npy" "$tmp/two.npy"; then
    echo "FAIL: $name: two ranks (rc $rc) differ from one process"
    cat "$tmp/one.jsonl" "$tmp/two.jsonl" "$tmp/two.err"
    failures=$((failures + 1))
  else
    echo "ok: $name: two ranks print one process's $(grep -c '"id"' "$tmp/two.jsonl") tokens and logits"
  fi
}

same_as_one_process tiny-qwen --model "$source_dir/models/tiny-qwen/tiny-qwen.gguf" --prompt "86+174=" -n 12 \
  --ignore-eos --prefill-chunk 2 --ctx 64
same_as_one_process stories260K --model "$source_dir/../shared/data/stories260K/stories260K.gguf" --vm reference \
  --prompt "Once upon a time" -n 16 --prefill-chunk 3 --ctx 64

# A bad split on every rank: one line, the job fails (never hangs).
timeout 120 $mpirun "$exe" --mpi --model "$source_dir/../shared/data/stories260K/stories260K.gguf" --vm reference \
  --split 4,2 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] || ! grep -q "the split's stages hold 6 layers but the model has 5" "$tmp/err"; then
  echo "FAIL: --mpi --split 4,2 -> rc $rc"
  cat "$tmp/err"
  failures=$((failures + 1))
else
  echo "ok: --mpi --split 4,2 -> $(grep -m1 'split' "$tmp/err")"
fi

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "all passed"
