#!/usr/bin/env bash
# Builds and runs the out-of-tree consumer (tests/consumer) against an installed octo in a temporary
# prefix.
#   run.sh BUILD_DIR [CXX_FLAGS]
#       installs the existing build tree BUILD_DIR (whatever its core is; static by default).
#   run.sh --shared SOURCE_DIR [CXX_FLAGS] [CXX_COMPILER] [LAUNCHER]
#       configures, builds and installs a second, shared core (-DBUILD_SHARED_LIBS=ON, no tests, examples,
#       benchmarks or tools) from SOURCE_DIR first; it compiles the core once more (OCTO_CONSUMER_JOBS, 2).
# Either way it checks what got installed, then configures the consumer with only the prefix on
# CMAKE_PREFIX_PATH, builds it and runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quiet() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "run.sh: failed: $*" >&2; exit 1; }; }

shared=0
if [[ "${1:-}" == "--shared" ]]; then
  shared=1
  shift
  src=$(cd "$1" && pwd)
  flags="${2:-}"
  extra=()
  [[ -n "${3:-}" ]] && extra+=("-DCMAKE_CXX_COMPILER=$3")
  [[ -n "${4:-}" ]] && extra+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$4")
  # Build type None (no -O): the test checks what is installed and how it links, not speed, and an
  # unoptimized core compiles in about 30% less time (CI's 2 cores).
  quiet cmake -S "$src" -B "$tmp/octo" -G Ninja -DCMAKE_BUILD_TYPE=None -DBUILD_SHARED_LIBS=ON \
    -DOCTO_BUILD_TESTS=OFF -DOCTO_BUILD_EXAMPLES=OFF -DOCTO_BUILD_BENCHMARKS=OFF -DOCTO_BUILD_TOOLS=OFF \
    "${extra[@]}"
  quiet cmake --build "$tmp/octo" -j "${OCTO_CONSUMER_JOBS:-2}"
  build="$tmp/octo"
else
  build=$(cd "$1" && pwd)
  flags="${2:-}"
fi

prefix="$tmp/prefix"
quiet cmake --install "$build" --prefix "$prefix"
libdir=$(dirname "$(find "$prefix" -name octoConfig.cmake -print -quit)")/../..
for f in octoConfig.cmake octoConfigVersion.cmake octoTargets.cmake OctoDependencies.cmake; do
  [[ -f "$libdir/cmake/octo/$f" ]] || { echo "run.sh: $f not installed" >&2; exit 1; }
done
[[ -f "$prefix/include/octo.hpp" ]] || { echo "run.sh: octo.hpp not installed" >&2; exit 1; }
[[ -f "$prefix/share/octo/LICENSE" ]] || { echo "run.sh: LICENSE not installed (share/octo/LICENSE)" >&2; exit 1; }
if [[ $shared == 1 ]]; then
  ls "$libdir"/libocto_core.so* >/dev/null 2>&1 || { echo "run.sh: no shared libocto_core.so installed" >&2; exit 1; }
else
  ls "$libdir"/libocto_core.* >/dev/null 2>&1 || { echo "run.sh: libocto_core not installed" >&2; exit 1; }
fi

quiet cmake -S "$here" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$flags"
quiet cmake --build "$tmp/build"
if [[ $shared == 1 ]]; then
  # The consumer must load the installed shared core, not a copy linked into it.
  # Captured first: `ldd | grep -q` under pipefail fails whenever grep exits before ldd finishes writing.
  libs=$(ldd "$tmp/build/consumer")
  [[ $libs == *"$prefix"*libocto_core.so* ]] ||
    { echo "$libs"; echo "run.sh: the consumer does not load the installed libocto_core.so" >&2; exit 1; }
fi
"$tmp/build/consumer"
