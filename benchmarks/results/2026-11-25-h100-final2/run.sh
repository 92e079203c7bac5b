# End-of-session H100 run 2 (after the fixes): conformance; octo and llama.cpp on the same files
# (0.5B, 1.5B x Q8_0, F16, Q4_K_M: bench_decode and llama-bench -p 512 -n 128 -r 2); fused vs plain and
# device vs host token loop on 0.5B Q8_0; flash-decoding attention opt-in vs the default.
tar -C .carry -xJf .carry/bin.tar.xz; set -u; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=.carry/bin; T=.carry/qwen2-tokenizer; S=/tmp/y; R=$OUT/r; mkdir -p $S $R /tmp/peer-bin; tar -C /tmp/peer-bin -xJf .carry/peer/peer.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/env.txt 2>&1
timeout 240 $B/gpu_conformance > $R/conformance.txt 2>&1; el "conformance rc=$?"; grep "test cases\|assertions" $R/conformance.txt
for sh in 0.5b 1.5b; do
  python3 tools/make_bench_models.py $sh $S/$sh-hf --tokenizer $T > /dev/null 2>&1
  for ty in q8_0 f16 q4_k_m; do
    g=$S/$sh-$ty.gguf; $B/octo convert $S/$sh-hf $g --type $ty --name q > /dev/null 2>&1
    timeout 60 $B/bench_decode --model $g --name $sh-$ty >> $R/decode.jsonl 2>> $R/decode-log.txt
    timeout 90 /tmp/peer-bin/llama-bench -m $g -p 512 -n 128 -ngl 99 -r 2 -o jsonl >> $R/peer-bench.jsonl 2>> $R/peer-log.txt
    el "$sh $ty"
  done
done
g=$S/0.5b-q8_0.gguf
timeout 60 env OCTO_FUSION=0 $B/bench_decode --model $g --name 0.5b-q8_0-plain >> $R/variants.jsonl 2>> $R/variants-log.txt
timeout 60 $B/bench_decode --model $g --name 0.5b-q8_0-hostloop --host-loop >> $R/variants.jsonl 2>> $R/variants-log.txt
timeout 60 env OCTO_ATTENTION=flash $B/bench_decode --model $g --name 0.5b-q8_0-flash >> $R/variants.jsonl 2>> $R/variants-log.txt
timeout 60 $B/bench_decode --model $g --name 0.5b-q8_0-profile --profile --decode-tokens 32 >> $R/variants.jsonl 2>> $R/profile-step.txt
timeout 40 $B/bench_attention --kv-types f16 >> $R/attention.jsonl 2>> $R/attention-log.txt
timeout 40 env OCTO_ATTENTION=flash $B/bench_attention --kv-types f16 >> $R/attention-flash.jsonl 2>> $R/attention-log.txt
el extras
tar -C $R -czf $OUT/results.tgz . ; python3 - <<PY
import json
for l in open("$R/decode.jsonl"):
    o = json.loads(l); print(o.get("label"), round(o.get("decode_tok_s", 0), 1), round(o.get("prefill_tok_s", 0)), round(o.get("fraction_of_bound", 0), 3), o.get("task_dispatches_per_layer"))
for l in open("$R/peer-bench.jsonl"):
    o = json.loads(l); print("peer", o.get("model_filename", "")[-20:], o.get("n_prompt"), o.get("n_gen"), round(o.get("avg_ts", 0), 1))
for l in open("$R/variants.jsonl"):
    o = json.loads(l)
    if o.get("name") == "decode": print(o.get("label"), round(o.get("decode_tok_s", 0), 1), o.get("task_dispatches_per_layer"))
PY
