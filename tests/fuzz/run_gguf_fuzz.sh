#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer target with clang++ (-fsanitize=fuzzer,address,undefined), writes a
# seed corpus of valid files, and fuzzes for a bounded time. Exit status nonzero on any crash, leak,
# sanitizer report or build failure. Needs Debian's clang and libclang-rt-dev (scripts/quickstart.sh
# installs them).
#   usage: tests/fuzz/run_gguf_fuzz.sh [SECONDS (default 60)] [WORK_DIR (default build/fuzz)]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
work=${2:-$root/build/fuzz}
cxx=${OCTO_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++ clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null; then cxx=$c; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "run_gguf_fuzz.sh: clang++ not found (apt-get install clang libclang-rt-dev)" >&2
  exit 1
fi
mkdir -p "$work"
launcher=()
command -v ccache >/dev/null && launcher=(ccache)
flags=(-std=c++20 -g -O1 -I"$root/include" -Wall -Wextra)
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)

echo "run_gguf_fuzz.sh: building with $cxx in $work" >&2
"${launcher[@]}" "$cxx" "${flags[@]}" "${san[@]}" -fsanitize=fuzzer "$root/tests/fuzz/gguf_fuzz.cpp" \
  "$root/src/model/gguf_reader.cpp" -o "$work/gguf_fuzz"
"${launcher[@]}" "$cxx" "${flags[@]}" "$root/tests/fuzz/gguf_seeds.cpp" "$root/src/model/gguf_reader.cpp" \
  "$root/src/model/gguf_writer.cpp" -o "$work/gguf_seeds"

rm -rf "$work/seeds"
"$work/gguf_seeds" "$work/seeds" >&2
mkdir -p "$work/corpus" "$work/artifacts"
# New inputs go to corpus/ (kept between runs); seeds/ is regenerated each time.
exec "$work/gguf_fuzz" "$work/corpus" "$work/seeds" \
  -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/tests/fuzz/gguf.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1
