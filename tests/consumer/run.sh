#!/usr/bin/env bash
# Installs octo from an existing build tree into a temporary prefix, then configures, builds and runs
# the out-of-tree consumer against it. Usage: run.sh BUILD_DIR [CXX_FLAGS]
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$here" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_CXX_FLAGS="${2:-}" >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/consumer"
