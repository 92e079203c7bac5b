#!/usr/bin/env bash
# Builds what tools/h100_bench.sh runs, here (Debian 12), for the GPU machine (Ubuntu 24.04): Release,
# the C++ runtime linked statically, into build/device; copies the stripped binaries to .carry/bin/,
# the Qwen2 tokenizer to .carry/qwen2-tokenizer and, when missing, fetches the Vulkan loader into .gl/.
# Then the lead runs, with carry [".carry", ".gl"]: bash tools/h100_bench.sh
# PEER_SRC_DIR=DIR (a llama.cpp tree or git dir with commit 3f545bec) also packs the peer's build files.
# Several people at once: give each their own BUILD_DIR (e.g. build/device-gemv) and CARRY_DIR (e.g.
# .carry-gemv, then carry [".carry-gemv", ".gl"] and BENCH_BIN=.carry-gemv/bin on the device), or the
# builds trample each other.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build/device}
carry=${CARRY_DIR:-.carry}
tokenizer=${QWEN2_TOKENIZER:-$root/../shared/data/qwen2-tokenizer}
targets=(gpu_conformance gpu_conformance_gemv gpu_conformance_fused gpu_conformance_qkv gpu_fused_decode gpu_gemm_tiles gpu_prefill_head gpu_layer_stats gpu_control_words bench_layer_skip bench_vm_dispatch bench_gemv_bandwidth bench_gemm bench_decode bench_kernels bench_stream bench_attention octo_tool octo_devices qwen_generate)

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" > /dev/null
cmake --build "$build" --target "${targets[@]}" -j"${JOBS:-2}"

mkdir -p "$carry/bin"
for t in gpu_conformance gpu_conformance_gemv gpu_conformance_fused gpu_conformance_qkv gpu_fused_decode gpu_gemm_tiles gpu_prefill_head gpu_layer_stats gpu_control_words bench_layer_skip bench_vm_dispatch bench_gemv_bandwidth bench_gemm bench_decode bench_kernels bench_stream bench_attention octo octo_devices qwen_generate; do
  f=$(find "$build" -type f -name "$t" -perm -u+x | head -n 1)
  [ -n "$f" ] || { echo "build_for_device.sh: no binary '$t' in $build" >&2; exit 1; }
  if ldd "$f" | grep -q 'libstdc++\|libgcc_s'; then
    echo "build_for_device.sh: $f links libstdc++/libgcc_s dynamically" >&2; exit 1
  fi
  strip -o "$carry/bin/$t" "$f"  # the carry is limited to 64 MiB
done
mkdir -p "$carry/qwen2-tokenizer"
for f in vocab.json merges.txt tokenizer_config.json added_tokens.json special_tokens_map.json LICENSE; do
  [ -f "$tokenizer/$f" ] && cp "$tokenizer/$f" "$carry/qwen2-tokenizer/"
done
[ -f "$carry/qwen2-tokenizer/vocab.json" ] || { echo "build_for_device.sh: no tokenizer in $tokenizer" >&2; exit 1; }
if ! compgen -G ".gl/libvulkan1_*.deb" > /dev/null && [ -x ../shared/tools/vulkan-loader.sh ]; then
  ../shared/tools/vulkan-loader.sh || echo "build_for_device.sh: fetching the Vulkan loader failed (.gl/)" >&2
fi
# The peer (llama.cpp's Vulkan backend, tools/build_peer.sh): with PEER_SRC (a llama.cpp tree or git dir
# holding the pinned commit) its patched build files travel too and are built on the GPU machine by the
# peer steps of tools/h100_bench.sh (2 shared cores here need about an hour for its 549 steps).
if [ -n "${PEER_SRC_DIR:-}" ]; then
  bash tools/build_peer.sh --pack-source "$carry/peer-src.tar.xz" "$PEER_SRC_DIR"
fi
du -sh "$carry" .gl 2>/dev/null || true
ls -la "$carry/bin"
