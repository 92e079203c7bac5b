#!/usr/bin/env bash
# The README's two commands: `demo` (the main job: text generation with tiny-qwen) and `test` (the whole suite, then again under
# AddressSanitizer + UBSan). Installs missing Debian packages, configures, builds, runs.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 demo|test [extra args for the demo]" >&2; exit 2; }
[ $# -ge 1 ] || usage
mode=$1; shift

packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev doctest-dev
  libvulkan-dev mesa-vulkan-drivers vulkan-tools vulkan-validationlayers glslc glslang-dev glslang-tools
  spirv-tools spirv-headers libshaderc-dev libpcre2-dev libzstd-dev libxxhash-dev liburing-dev libcli11-dev
  clang libclang-rt-dev python3)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "octo: installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

jobs=$(nproc)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

# The machine facts that decide how the Vulkan driver behaves (lavapipe's code generation follows the
# CPU's vector width; its leaks differ with it), printed so a failure elsewhere can be read from the log.
machine_facts() {
  echo "octo: machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)," \
    "CPU $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)" >&2
  echo "octo: CPU vector extensions: $(grep -m1 -o -w -E 'avx|avx2|avx512f|avx512bw|avx512vl' /proc/cpuinfo \
    | sort -u | tr '\n' ' ')${LP_NATIVE_VECTOR_WIDTH:+(LP_NATIVE_VECTOR_WIDTH=$LP_NATIVE_VECTOR_WIDTH)}" >&2
  echo "octo: packages: $(dpkg-query -W -f='${Package} ${Version}, ' mesa-vulkan-drivers 'libllvm*' libvulkan1 \
    2>/dev/null | sed 's/, $//')" >&2
  echo "octo: disk free here: $(df -h --output=avail . | tail -1 | tr -d ' ')" >&2
  if command -v vulkaninfo >/dev/null; then
    vulkaninfo --summary 2>/dev/null | awk -F'= ' '/deviceName|driverInfo|apiVersion/ {gsub(/^[ \t]+/, "", $1);
      printf "octo: vulkan: %s= %s\n", $1, $2}' >&2 || true
  fi
}

# The suite's MPI tests (two pipeline stages as two ranks, docs/multi-gpu.md) need Open MPI.
[ "$mode" = test ] && packages+=(libopenmpi-dev openmpi-bin)
install_missing
case "$mode" in
  demo)
    build build/release -DCMAKE_BUILD_TYPE=Release -DOCTO_BUILD_TESTS=OFF -DOCTO_BUILD_BENCHMARKS=OFF
    generate=(./build/release/examples/qwen_generate/qwen_generate --model models/tiny-qwen/tiny-qwen.gguf)
    if [ $# -gt 0 ]; then  # the user's own options, e.g. --prompt "..." or --model other.gguf
      case " $* " in
        *" --model "*) exec ./build/release/examples/qwen_generate/qwen_generate "$@" ;;
        *) exec "${generate[@]}" "$@" ;;
      esac
    fi
    echo "octo: tiny-qwen (models/tiny-qwen, trained by this project) tells a story:" >&2
    story="Once upon a time, there was a"
    printf '%s' "$story"
    "${generate[@]}" --prompt "$story" -n 64
    echo
    echo "octo: and does sums it never saw in training:" >&2
    for sum in 86+174= 987+887= 916+135= 805+449= 220+248=; do  # held out of training (reference.json)
      # greedy; the model goes on with another sum after the newline, so keep the first line
      answer=$("${generate[@]}" --prompt "$sum" -n 5 2>/dev/null)
      echo "$sum${answer%%$'\n'*}"
    done
    ;;
  test)
    machine_facts
    # One driver shader cache for both builds' GPU tests (tests/gpu/CMakeLists.txt): lavapipe compiles
    # each pipeline once, not once per run.
    shader_cache="$PWD/build/test-shader-cache"
    # The release suite runs on a shared core and the sanitizer suite on a static one, so each build's
    # package_consumer test installs one of the two routes a user may take (BUILD_SHARED_LIBS).
    build build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DOCTO_TEST_SHADER_CACHE="$shader_cache"
    (cd build/release && ctest --output-on-failure -j "$jobs")
    echo "octo: the suite again under AddressSanitizer + UBSan" >&2
    # Line tables only (-g1): enough for the sanitizers' file:line stacks; the instrumented build takes
    # 4.3 GB instead of 5.4 at -g (a CI disk ran full while linking it). The shaders are the release
    # tree's, just built from the same sources (OCTO_SPIRV_FROM, src/vulkan/CMakeLists.txt).
    build build/sanitize -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DBUILD_SHARED_LIBS=OFF -DOCTO_SANITIZE=ON -DOCTO_BUILD_EXAMPLES=OFF -DOCTO_BUILD_BENCHMARKS=OFF \
      -DOCTO_TEST_SHADER_CACHE="$shader_cache" -DOCTO_SPIRV_FROM="$PWD/build/release/src/vulkan/spirv"
    (cd build/sanitize && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$jobs")
    ;;
  *) usage ;;
esac
