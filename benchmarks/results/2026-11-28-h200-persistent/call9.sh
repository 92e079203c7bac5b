#!/usr/bin/env bash
# Device call 9 (ninth session, H200): a user's run through qwen_generate's defaults (greedy, the
# engine's own prefill chunking) on 1.5B Q4_K_M with a ~600-token prompt, with the weights dequantized
# once (the default) and without (OCTO_GEMM_DEQUANT=0): the same tokens expected (the same f16 values),
# and the prefill speed each reports.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
prompt="$(seq 1 250 | tr '\n' ' ')"
for r in 1 2; do
  for v in default 0; do
    if [ $v = default ]; then e=""; else e="OCTO_GEMM_DEQUANT=0"; fi
    env $e timeout 60 $B/qwen_generate --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt "$prompt" -n 48 --ignore-eos --json > $OUT/gen-$v-$r.jsonl 2>> $OUT/log.txt
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob
out = sys.argv[1]
def read(f):
    lines = [json.loads(l) for l in open(f) if l.startswith('{')]
    return [j['id'] for j in lines if 'id' in j], [j['summary'] for j in lines if 'summary' in j]
for f in sorted(glob.glob(f"{out}/gen-*.jsonl")):
    ids, s = read(f)
    s = s[0] if s else {}
    print(f.split('/')[-1], len(ids), {k: s.get(k) for k in ('prompt_tokens', 'prefill_tok_s', 'decode_tok_s')})
a, b = read(f"{out}/gen-default-1.jsonl")[0], read(f"{out}/gen-0-1.jsonl")[0]
print("tokens", len(a), len(b), "identical" if a == b and a else "DIFFER")
PY
