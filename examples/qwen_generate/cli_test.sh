#!/bin/sh
# qwen_generate's command line: every bad option, value or file exits nonzero with exactly one line on
# stderr and nothing on stdout; a good run streams JSON records and writes a valid .npy of the logits.
# usage: cli_test.sh QWEN_GENERATE SHARED_DATA_DIR [SOURCE_DIR]
exe="$1"
data="$2"
source_dir="$3"
model="$data/stories260K/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect_error PATTERN ARGS...: nonzero exit, stdout empty, stderr one line containing PATTERN (within
# two minutes: a hang is a failure too)
limit=""
command -v timeout >/dev/null && limit="timeout 120"
expect_error() {
  pattern="$1"
  shift
  $limit "$exe" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || [ -s "$tmp/out" ] || ! grep -q -- "$pattern" "$tmp/err"; then
    echo "FAIL: qwen_generate $* -> rc=$rc, $lines stderr lines:"
    cat "$tmp/err"
    failures=$((failures + 1))
  else
    echo "ok: $* -> $(cat "$tmp/err")"
  fi
}

head -c 3000 "$model" >"$tmp/truncated.gguf"
printf 'GGUF\003\000\000\000garbage' >"$tmp/garbage.gguf"
: >"$tmp/empty.gguf"

expect_error "--model FILE.gguf is required"
expect_error "no such file" --model "$tmp/missing.gguf"
expect_error "truncated.gguf" --model "$tmp/truncated.gguf" --vm reference
expect_error "garbage.gguf" --model "$tmp/garbage.gguf" --vm reference
expect_error "empty.gguf" --model "$tmp/empty.gguf" --vm reference
expect_error "unknown option '--bogus'" --model "$model" --bogus
expect_error "unknown option '--prompt-file'" --model "$model" --prompt-file "$tmp/p.txt"
expect_error "unexpected argument 'stray'" --model "$model" stray
expect_error "needs a value" --model "$model" --prompt
expect_error "not an integer" --model "$model" -n abc
expect_error "out of range" --model "$model" -n -3
expect_error "not a finite number" --model "$model" --temperature nan
expect_error "temperature must be >= 0" --model "$model" --temperature -1
expect_error "top-p must be in" --model "$model" --top-p 1.5
expect_error "not an integer" --model "$model" --top-k 2.5
expect_error "repeat-penalty must be > 0" --model "$model" --repeat-penalty 0
expect_error "not an integer" --model "$model" --seed x
expect_error "out of range" --model "$model" --ctx 0
expect_error "not one of vulkan, reference" --model "$model" --vm cuda
expect_error "unknown KV cache type 'q4_0' (f32, f16 or q8_0)" --model "$model" --kv-type q4_0
expect_error "raise --ctx" --model "$model" --vm reference --ctx 4 --prompt "Once upon a time there was a little girl"
# stories260K has no chat template nor ChatML's or Llama 3's markers: --chat cannot write its format
expect_error "--chat: the model's chat template is none of ChatML" --model "$model" --vm reference --chat --prompt "Hi"
expect_error "does not exist" --model "$model" --vm reference -n 2 --dump-logits /nonexistent-dir/x.npy
expect_error "is a directory" --model "$model" --vm reference -n 2 --dump-logits "$tmp"

# A FIFO as the model is refused at once (it used to block forever waiting for a writer).
if mkfifo "$tmp/fifo.gguf" 2>/dev/null; then
  expect_error "is a FIFO" --model "$tmp/fifo.gguf" --vm reference
fi
# A bad model leaves an existing --dump-logits file as it was (it used to be emptied before the model
# was checked).
echo "precious" >"$tmp/keep.npy"
expect_error "truncated.gguf" --model "$tmp/truncated.gguf" --vm reference --dump-logits "$tmp/keep.npy"
if [ "$(cat "$tmp/keep.npy")" = "precious" ] && [ -z "$(ls "$tmp" | grep 'keep.npy.tmp')" ]; then
  echo "ok: --dump-logits file kept when the model is bad"
else
  echo "FAIL: --dump-logits file changed by a failed run"
  failures=$((failures + 1))
fi

expect_error "--vram-budget: 'abc' is not a size" --model "$model" --vram-budget abc
expect_error "out of range" --model "$model" --ring 0
expect_error "below the minimum" --model "$model" --vm reference --vram-budget 1KiB
expect_error "out of range" --model "$model" --in-flight 0
expect_error "not an integer" --model "$model" --in-flight x
expect_error "not an integer" --model "$model" --then-ids 1,x
expect_error "past the model's vocabulary" --model "$model" --vm reference --then-ids 3,100000

# --then-ids replays generated tokens: the prompt plus the first 3 greedy ids continues with ids 4..8.
"$exe" --model "$model" --vm reference -n 8 --json 2>/dev/null | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' >"$tmp/ids8"
"$exe" --model "$model" --vm reference -n 5 --json --then-ids "$(head -n 3 "$tmp/ids8" | paste -sd, -)" 2>/dev/null |
  sed -n 's/^{"id":\([0-9]*\),.*/\1/p' >"$tmp/ids5"
if [ "$(wc -l <"$tmp/ids8")" -ne 8 ] || [ "$(tail -n 5 "$tmp/ids8")" != "$(cat "$tmp/ids5")" ]; then
  echo "FAIL: --then-ids did not continue the greedy run: $(paste -sd' ' "$tmp/ids8") / $(paste -sd' ' "$tmp/ids5")"
  failures=$((failures + 1))
else
  echo "ok: --then-ids continues the greedy run ($(paste -sd' ' "$tmp/ids5"))"
fi

# The greedy token loop on the device (--in-flight) and on the host (--host-loop): the same tokens, and
# --verbose says which ran and how many submits were in flight.
"$exe" --model "$model" --vm reference -n 12 --json --in-flight 3 --verbose 2>"$tmp/err3" | grep -v summary >"$tmp/loop3"
"$exe" --model "$model" --vm reference -n 12 --json --host-loop --verbose 2>"$tmp/errh" | grep -v summary >"$tmp/looph"
if [ "$(grep -c '"id"' "$tmp/loop3")" -ne 12 ] || [ "$(cat "$tmp/loop3")" != "$(cat "$tmp/looph")" ] ||
   ! grep -q "decode loop: on the device, up to 3 submits in flight" "$tmp/err3" ||
   ! grep -q "decode loop: on the host" "$tmp/errh"; then
  echo "FAIL: --in-flight 3 and --host-loop differ or --verbose does not say so:"
  cat "$tmp/err3" "$tmp/errh"
  failures=$((failures + 1))
else
  echo "ok: --in-flight 3 and --host-loop give the same tokens"
fi

# Streaming with the smallest budget the plan accepts (every layer streamed, read from the mapping each
# pass, ring of 1): the same tokens as the resident run.
minimum=$("$exe" --model "$model" --vm reference --vram-budget 1KiB --ring 1 2>&1 | sed -n 's/.* = \([0-9]*\) bytes .*/\1/p')
if [ -z "$minimum" ]; then
  echo "FAIL: no minimum in the budget error"
  failures=$((failures + 1))
else
  "$exe" --model "$model" --vm reference -n 8 --json >"$tmp/resident.jsonl" 2>/dev/null
  "$exe" --model "$model" --vm reference -n 8 --json --vram-budget "$minimum" --ring 1 >"$tmp/streamed.jsonl" 2>"$tmp/err"
  if ! grep -q "0 of [0-9]* layers resident" "$tmp/err" || ! grep -q '^streaming: ' "$tmp/err" ||
     [ "$(grep -v summary "$tmp/resident.jsonl")" != "$(grep -v summary "$tmp/streamed.jsonl")" ] ||
     [ "$(grep -c '"id"' "$tmp/streamed.jsonl")" -lt 8 ]; then
    echo "FAIL: streamed run differs from the resident one or printed no plan:"
    cat "$tmp/err"
    failures=$((failures + 1))
  else
    echo "ok: --vram-budget $minimum (every layer streamed) gives the resident run's tokens"
  fi
fi

# A good run: 8 JSON token records and a summary; logits [512] float32 in a v1.0 .npy whose argmax is
# stories260K's first golden token after BOS (403).
if ! "$exe" --model "$model" --vm reference -n 8 --json --dump-logits "$tmp/l.npy" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: good run exited nonzero: $(cat "$tmp/err")"
  failures=$((failures + 1))
else
  records=$(grep -c '^{"id":[0-9]*,"text":".*"}$' "$tmp/out")
  summary=$(grep -c '^{"summary":{"prompt_tokens":1,"generated_tokens":8,.*"decode_tok_s":.*"ms_per_token":' "$tmp/out")
  size=$(wc -c <"$tmp/l.npy")
  magic=$(head -c 6 "$tmp/l.npy" | tail -c 5)
  if [ "$records" -ne 8 ] || [ "$summary" -ne 1 ] || [ "$size" -ne $((128 + 512 * 4)) ] || [ "$magic" != "NUMPY" ]; then
    echo "FAIL: good run: $records records, $summary summary, npy $size bytes, magic '$magic'"
    cat "$tmp/out"
    failures=$((failures + 1))
  else
    echo "ok: good run"
  fi
  first=$(head -n 1 "$tmp/out")
  case "$first" in
    '{"id":403,'*) echo "ok: first token 403" ;;
    *) echo "FAIL: first token record $first"; failures=$((failures + 1)) ;;
  esac
  if command -v python3 >/dev/null && python3 -c "import numpy" 2>/dev/null; then
    if python3 -c "import numpy,sys; a=numpy.load(sys.argv[1]); assert a.shape==(512,) and a.dtype==numpy.float32 and int(a.argmax())==403" "$tmp/l.npy"; then
      echo "ok: numpy reads the logits"
    else
      echo "FAIL: numpy could not read the logits"
      failures=$((failures + 1))
    fi
  fi
fi

# Pipelines (docs/multi-gpu.md): bad splits and device lists are one line each; two stages of one
# process print the one-stage run's tokens and logits, byte for byte.
expect_error "the split's stages hold 4 layers but the model has 5" --model "$model" --vm reference --stages 2 --split 2,2
expect_error "the split gives stage 1 0 layers" --model "$model" --vm reference --split 5,0
expect_error "2 devices for 3 pipeline stages" --model "$model" --vm reference --stages 3 --devices 0,0
expect_error "has an empty item" --model "$model" --devices 0,,1
expect_error "give one of them" --model "$model" --device 0 --devices 0,1
expect_error "no Vulkan device" --model "$model" --devices 0,97
"$exe" --model "$model" --vm reference -n 12 --prefill-chunk 2 --prompt "Once upon a time" --json \
  --dump-logits "$tmp/one.npy" >"$tmp/one.jsonl" 2>/dev/null
"$exe" --model "$model" --vm reference -n 12 --prefill-chunk 2 --prompt "Once upon a time" --json \
  --dump-logits "$tmp/two.npy" --stages 2 --split 1,4 >"$tmp/two.jsonl" 2>"$tmp/err"
if [ "$(grep -c '"id"' "$tmp/one.jsonl")" -lt 12 ] || [ "$(grep -v summary "$tmp/one.jsonl")" != "$(grep -v summary "$tmp/two.jsonl")" ] ||
   ! cmp -s "$tmp/one.npy" "$tmp/two.npy" || ! grep -q "pipeline: 2 stages" "$tmp/err"; then
  echo "FAIL: --stages 2 --split 1,4 differs from one stage:"
  cat "$tmp/err"
  failures=$((failures + 1))
else
  echo "ok: --stages 2 --split 1,4 gives one stage's tokens and logits"
fi

# The project's tiny Qwen2 model through the CLI: PyTorch's greedy answer to a held-out sum.
tiny="$source_dir/models/tiny-qwen/tiny-qwen.gguf"
if [ -n "$source_dir" ]; then
  out=$("$exe" --model "$tiny" --vm reference --prompt "86+174=" -n 3 2>"$tmp/err")
  if [ "$out" = "260" ]; then
    echo "ok: tiny-qwen 86+174=260"
  else
    echo "FAIL: tiny-qwen answered '$out': $(cat "$tmp/err")"
    failures=$((failures + 1))
  fi
fi

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "all passed"
