# The end-of-session H100 run (one call): conformance, the peer table (0.5B/1.5B x F16/Q8_0/Q4_K_M),
# fused vs plain and device vs host token loop on 0.5B Q8_0, decode attention, 7B Q8_0 beside the peer
# with llama.cpp's partial offload against octo's streaming defaults.
set -u; t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
bash tools/h100_bench.sh env conformance; el conformance; tail -3 $OUT/conformance.txt
bash tools/h100_bench.sh peer; el peer
B=.carry/bin; S=/tmp/x; mkdir -p $S; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 tools/make_bench_models.py 0.5b $S/hf --tokenizer .carry/qwen2-tokenizer > /dev/null 2>&1
$B/octo convert $S/hf $S/q8.gguf --type q8_0 --name q > /dev/null 2>&1
for v in fused plain hostloop; do
  case $v in plain) env_=(env OCTO_FUSION=0);; *) env_=(env);; esac
  extra=(); [ $v = hostloop ] && extra=(--host-loop)
  timeout 60 "${env_[@]}" $B/bench_decode --model $S/q8.gguf --name 0.5b-q8_0-$v "${extra[@]}" >> $OUT/variants.jsonl 2>> $OUT/variants-log.txt
done
timeout 60 $B/bench_decode --model $S/q8.gguf --name 0.5b-q8_0-profile --profile --decode-tokens 32 >> $OUT/variants.jsonl 2>> $OUT/profile-step.txt
timeout 60 $B/bench_attention >> $OUT/attention.jsonl 2>> $OUT/attention-log.txt; el extras
BENCH_TYPES=q8_0 bash tools/h100_bench.sh peer7b; el peer7b
cd $OUT && tar czf results.tgz --exclude results.tgz . && ls
