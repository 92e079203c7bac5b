set -u; for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=.carry-mid; T=$C/qwen2-tokenizer; S=/tmp/s; mkdir -p $S; t0=$(date +%s)
timeout 200 $C/new/gpu_conformance > $OUT/conformance.txt 2>&1; echo "conformance rc=$? $(( $(date +%s)-t0 ))s"; tail -3 $OUT/conformance.txt
for sh in 0.5b 1.5b; do
  python3 tools/make_bench_models.py $sh $S/$sh-hf --tokenizer $T > /dev/null 2>&1
  for ty in q8_0 f16 q4_k_m; do
    g=$S/$sh-$ty.gguf; $C/new/octo convert $S/$sh-hf $g --type $ty --name q > /dev/null 2>&1
    for v in base new; do
      timeout 90 $C/$v/bench_decode --model $g --name $sh-$ty-$v --prompt-tokens 512 --decode-tokens 128 >> $OUT/decode.jsonl 2>>$OUT/decode-err.log
    done
    echo "$sh $ty $(( $(date +%s)-t0 ))s"
  done
done
timeout 120 $C/new/bench_decode --model $S/0.5b-q8_0.gguf --name prof --profile --decode-tokens 32 > $OUT/profile.jsonl 2> $OUT/profile-err.txt
python3 -c "
import json
for l in open('$OUT/decode.jsonl'):
  o=json.loads(l); print(o.get('name'), o.get('label'), 'dec', o.get('decode_tok_s'), 'pp', o.get('prefill_tok_s'), 'disp/L', o.get('task_dispatches_per_layer'), 'bar/L', o.get('barriers_per_layer'), o.get('error',''))
"; tail -40 $OUT/profile-err.txt; tail -5 $OUT/decode-err.log
