#!/usr/bin/env bash
# Builds and runs the out-of-tree consumer (tests/consumer) against an installed octo in a temporary
# prefix.
#   run.sh BUILD_DIR CXX_FLAGS static|shared
#       installs the build tree BUILD_DIR, whose core is static or shared (BUILD_SHARED_LIBS) as the third
#       argument says, checks what got installed, then configures the consumer with only the prefix on
#       CMAKE_PREFIX_PATH, builds it and runs it; a shared core must be the one the consumer loads.
# CI covers both routes without compiling the core a third time: scripts/quickstart.sh's release build
# has a shared core, its sanitizer build a static one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -eq 3 && ( $3 == static || $3 == shared ) ]] || { echo "usage: run.sh BUILD_DIR CXX_FLAGS static|shared" >&2; exit 2; }
build=$(cd "$1" && pwd)
flags=$2
shared=0
[[ $3 == shared ]] && shared=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quiet() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "run.sh: failed: $*" >&2; exit 1; }; }

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
  [[ -f "$libdir/libocto_core.a" ]] || { echo "run.sh: no static libocto_core.a installed" >&2; exit 1; }
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
