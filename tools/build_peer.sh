#!/usr/bin/env bash
# Builds the peer octo is measured against: llama.cpp's Vulkan backend (llama-bench and llama-completion)
# at a pinned commit, for the GPU machine (Ubuntu 24.04). Nothing of llama.cpp is kept in this
# repository: its source and build live outside it; only the stripped, packed binaries land in the carry
# folder next to octo's benchmark binaries.
#
#   bash tools/build_peer.sh SRC            here (Debian 12): SRC is a llama.cpp source tree, or a git
#                                           directory holding the pinned commit (e.g. the `fetch` mirror
#                                           .../llama.cpp/repo), checked out into PEER_SRC first. On
#                                           2026-11-29 `fetch github:ngxson/llama.cpp` brought a mirror
#                                           whose tip is the pinned commit (ggml-org's is over fetch's
#                                           size limit; ggerganov's and unslothai's lack the commit).
#   bash tools/build_peer.sh --pack-source FILE SRC
#                                           here: the patched source (build files only) with Debian's glslc,
#                                           libshaderc, Vulkan and SPIR-V headers in one tar.xz, for a build on the
#                                           GPU machine (16 cores; 2 shared cores here: about an hour).
#   bash tools/build_peer.sh --from-pack FILE
#                                           there: unpacks FILE into PEER_SRC (/tmp/peer-src) and builds
#                                           with every core, the same flags and the same glslc.
# Environment: PEER_COMMIT (3f545bec...), PEER_SRC (../peer-src), PEER_BUILD (../peer-build),
#   PEER_OUT (.carry/peer: the packed binaries and peer.json), JOBS (2 here, nproc from a pack).
#
# The one change to their code: Debian's Vulkan headers (1.3.239) lack vk::LayerSettingEXT, so the
# VK_EXT_layer_settings block of ggml_vk_instance_init is cut (the instance is created without the
# layer-settings chain; it only configured the validation layer, which a release build leaves off).
# Debian's glslc (2023.2) has no GL_KHR_cooperative_matrix: this peer runs without tensor cores
# (no coopmat shaders); every table made with it says so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
commit=${PEER_COMMIT:-3f545beccee69d9975f466ec7e45fd9aacd8ba90}
mode=build pack=""
case "${1:-}" in
  --pack-source) mode=pack pack=${2:?--pack-source FILE SRC}; shift 2 ;;
  --from-pack) mode=from-pack pack=$(cd "$(dirname "${2:?--from-pack FILE}")" && pwd)/$(basename "$2"); shift 2 ;;
  -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
esac
out=${PEER_OUT:-$root/.carry/peer}
cmake_vulkan=()
jobs=${JOBS:-2}

if [ "$mode" = from-pack ]; then
  # On the GPU machine: the pack holds the patched source, glslc (+ libshaderc) and the Vulkan headers;
  # the Vulkan loader comes from .gl/ (tools/h100_bench.sh unpacks it).
  src=${PEER_SRC:-/tmp/peer-src}
  build=${PEER_BUILD:-/tmp/peer-build}
  mkdir -p "$src" "$build"
  [ -f "$src/.peer-commit" ] || xz -dc "$pack" | tar -C "$src" -xf -
  src=$(cd "$src" && pwd) build=$(cd "$build" && pwd)
  export LD_LIBRARY_PATH="$src/.peer-tools/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  libvulkan=$(ldconfig -p | awk '/libvulkan\.so\.1 / { print $NF; exit }')
  [ -n "$libvulkan" ] || { echo "build_peer.sh: no libvulkan.so.1 (unpack .gl/*.deb first)" >&2; exit 1; }
  cmake_vulkan=(-DVulkan_INCLUDE_DIR="$src/.peer-tools/include" -DVulkan_LIBRARY="$libvulkan"
                -DVulkan_GLSLC_EXECUTABLE="$src/.peer-tools/bin/glslc"
                -DSPIRV-Headers_DIR="$src/.peer-tools/share/cmake/SPIRV-Headers")
  glslc_bin=$src/.peer-tools/bin/glslc
  jobs=${JOBS:-$(nproc)}
else
  src_arg=${1:-${PEER_SRC:-}}
  [ -n "$src_arg" ] || { echo "usage: build_peer.sh [--pack-source FILE] LLAMA_CPP_SOURCE_OR_GIT_DIR" >&2; exit 2; }
  src_arg=$(cd "$src_arg" && pwd)
  case "$src_arg/" in "$root"/*) echo "build_peer.sh: the llama.cpp source must live outside $root" >&2; exit 2;; esac
  # A git directory (bare or a .git folder): check the pinned commit out into PEER_SRC.
  if [ -f "$src_arg/HEAD" ] && [ -d "$src_arg/objects" ]; then
    src=$(mkdir -p "${PEER_SRC:-$root/../peer-src}" && cd "${PEER_SRC:-$root/../peer-src}" && pwd)
    case "$src/" in "$root"/*) echo "build_peer.sh: PEER_SRC must live outside $root" >&2; exit 2;; esac
    # Blobs a partial mirror lacks (test vocabulary GGUFs under models/) are not needed for the build.
    git --git-dir="$src_arg" --work-tree="$src" checkout -f "$commit" -- . 2>/dev/null || true
    echo "$commit" > "$src/.peer-commit"
  else
    src=$src_arg
  fi
  build=$(mkdir -p "${PEER_BUILD:-$root/../peer-build}" && cd "${PEER_BUILD:-$root/../peer-build}" && pwd)
  case "$build/" in "$root"/*) echo "build_peer.sh: PEER_BUILD must live outside $root" >&2; exit 2;; esac
  glslc_bin=$(command -v glslc)
fi
have=$(git -C "$src" rev-parse HEAD 2>/dev/null || cat "$src/.peer-commit" 2>/dev/null || echo unknown)
[ "$have" = "$commit" ] || echo "build_peer.sh: warning: source is at '$have', not the pinned $commit" >&2
vk=$src/ggml/src/ggml-vulkan/ggml-vulkan.cpp
[ -f "$vk" ] || { echo "build_peer.sh: no $vk" >&2; exit 1; }

# The documented change, idempotent: drop the layer-settings chain.
sed -i -e '/VkBool32 enable_best_practice = layer_settings;/,/vk::LayerSettingsCreateInfoEXT layer_setting_info(settings);/d' \
       -e 's/layers, extensions, &layer_setting_info);/layers, extensions, nullptr);/' "$vk"
if grep -q 'LayerSettingEXT\|layer_setting_info' "$vk"; then
  echo "build_peer.sh: the VK_EXT_layer_settings block did not come out cleanly; look at ggml_vk_instance_init" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
if [ "$mode" = pack ]; then
  # What the two targets need to configure and build (no models, docs, tests, examples, web UI).
  mkdir -p "$stage/.peer-tools/bin" "$stage/.peer-tools/lib" "$stage/.peer-tools/include"
  cp "$glslc_bin" "$stage/.peer-tools/bin/"
  ldd "$glslc_bin" | awk '/libshaderc/ { print $3 }' | xargs -r -I{} cp -L {} "$stage/.peer-tools/lib/"
  cp -r /usr/include/vulkan /usr/include/vk_video /usr/include/spirv "$stage/.peer-tools/include/"
  mkdir -p "$stage/.peer-tools/share/cmake"
  cp -r /usr/share/cmake/SPIRV-Headers "$stage/.peer-tools/share/cmake/"
  echo "$have" > "$stage/.peer-commit"
  mkdir -p "$(dirname "$pack")"
  extra=()
  [ -d "$src/app" ] && extra+=(app)
  tar -C "$src" --exclude=tools/ui --exclude='*.gguf' -cf - CMakeLists.txt cmake include src common vendor ggml tools \
      LICENSE licenses "${extra[@]}" | tar -C "$stage" -xf -
  tar -C "$stage" -cf - . | xz -T2 -6 > "$pack"
  ls -la "$pack"
  exit 0
fi

launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${cmake_vulkan[@]}" \
  -DGGML_VULKAN=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" > "$build/configure.log"
cmake --build "$build" --target llama-bench llama-completion -j"$jobs"

mkdir -p "$out"
for t in llama-bench llama-completion; do
  f=$(find "$build/bin" -type f -name "$t" -perm -u+x | sed -n 1p)
  [ -n "$f" ] || { echo "build_peer.sh: no binary '$t' in $build/bin" >&2; exit 1; }
  if ldd "$f" | grep -q 'libstdc++\|libgcc_s'; then
    echo "build_peer.sh: $f links libstdc++/libgcc_s dynamically" >&2; exit 1
  fi
  strip -o "$stage/$t" "$f"
done
# sed reads to the end: `| head -n 1` can kill the writer with SIGPIPE, which pipefail makes an exit (141).
glslc_version=$("$glslc_bin" --version 2>&1 | sed -n 1p)
coopmat=$(grep -o 'GL_KHR_cooperative_matrix not supported\|GL_KHR_cooperative_matrix supported' "$build/configure.log" | head -n 1 || true)
{
  echo "{\"engine\": \"llama.cpp ggml-vulkan\", \"commit\": \"$commit\", \"source_commit\": \"$have\","
  echo " \"change\": \"VK_EXT_layer_settings block removed from ggml_vk_instance_init (Debian 12 Vulkan headers 1.3.239)\","
  echo " \"glslc\": \"$glslc_version\", \"cooperative_matrix_configure\": \"${coopmat:-unknown}\", \"tensor_cores\": false,"
  echo " \"note\": \"Debian's glslc has no GL_KHR_cooperative_matrix: this peer has no tensor-core (coopmat) path\","
  echo " \"flags\": \"Release -DGGML_VULKAN=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -static-libstdc++ -static-libgcc\","
  echo " \"needs\": \"$(ldd "$stage/llama-bench" | awk '/=>/ { print $1 }' | tr '\n' ' ' | sed 's/ $//')\","
  echo " \"built_with\": \"$mode on $(uname -n), $(c++ --version | sed -n 1p)\", \"built\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}"
} > "$stage/peer.json"
# Both binaries embed the same SPIR-V; one long-window archive stores it about once.
rm -f "$out/peer.tar.xz"
tar -C "$stage" -cf - llama-bench llama-completion peer.json | xz -T0 -9 --lzma2=dict=192MiB > "$out/peer.tar.xz"
cp "$stage/peer.json" "$out/peer.json"
if [ "$mode" = from-pack ]; then cp "$stage/llama-bench" "$stage/llama-completion" "$out/"; fi
ls -la "$stage" "$out"
echo "build_peer.sh: unpack with: tar -C DIR -xJf $out/peer.tar.xz"
