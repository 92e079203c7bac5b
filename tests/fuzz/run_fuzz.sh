#!/usr/bin/env bash
# Builds one libFuzzer target (tests/fuzz/TARGET_fuzz.cpp) with clang++ (-fsanitize=fuzzer,address,
# undefined) against octo's readers, writes its seed corpus from the real test models and data
# (fuzz_seeds.cpp; gguf_seeds.cpp for the GGUF reader), replays tests/fuzz/regressions/TARGET (every
# crash found so far), and fuzzes for a bounded time. Exit status nonzero on any crash, leak, sanitizer
# report, timeout, memory blow-up or build failure. Needs Debian's clang and libclang-rt-dev.
#   usage: tests/fuzz/run_fuzz.sh TARGET [SECONDS (default 60)] [WORK_DIR (default build/fuzz)]
#   TARGET: gguf, gguf_model, tokenizer, manifest, safetensors, ir_json
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${1:?usage: run_fuzz.sh TARGET [SECONDS] [WORK_DIR]}
seconds=${2:-60}
work=${3:-$root/build/fuzz}
[ -f "$root/tests/fuzz/${target}_fuzz.cpp" ] || { echo "run_fuzz.sh: no target '$target'" >&2; exit 2; }
cxx=${OCTO_FUZZ_CXX:-}
if [ -z "$cxx" ]; then
  for c in clang++ clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null; then cxx=$c; break; fi
  done
fi
if [ -z "$cxx" ]; then
  echo "run_fuzz.sh: clang++ not found (apt-get install clang libclang-rt-dev)" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(ccache)
flags=(-std=c++20 -g -O1 -I"$root/include" -DOCTO_FUZZ_SOURCE_DIR="\"$root\"" -Wall -Wextra)
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
libs=(-lpcre2-8 -lzstd -lpthread)
mkdir -p "$work/obj"

# The readers under test, instrumented for coverage (fuzzer-no-link), as an archive so each target
# links only the objects it reaches. An object is rebuilt when its source or any header under include/
# or src/ is newer (coarse, but the fuzz tests share one work folder and build it once).
sources=("$root"/src/file_io.cpp "$root"/src/ir/*.cpp "$root"/src/model/*.cpp "$root"/src/stream/manifest.cpp
  "$root"/src/stream/layer_reader.cpp "$root"/src/stream/decompose.cpp "$root"/src/runtime/model_source.cpp
  "$root"/src/runtime/model_source_gguf.cpp "$root"/src/runtime/model_source_directory.cpp
  "$root"/src/runtime/decomposed.cpp)
echo "run_fuzz.sh: building $target with $cxx in $work" >&2
export cxx work root
export CCACHE_NOHASHDIR=1  # the same objects whichever folder ctest or a user runs this from
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'o="$work/obj/$(echo "$1" | tr / _).o"
   if [ -f "$o" ] && [ ! "$1" -nt "$o" ] && [ -z "$(find "$root/include" "$root/src" -name "*.hpp" -newer "$o" | head -n 1)" ]; then exit 0; fi
   '"${launcher[*]:-} $cxx ${flags[*]} ${san[*]} -fsanitize=fuzzer-no-link"' -c "$1" -o "$o"' _ {}
objects=()
for f in "${sources[@]}"; do objects+=("$work/obj/$(echo "$f" | tr / _).o"); done
rm -f "$work/libocto_fuzz.a"
ar rcs "$work/libocto_fuzz.a" "${objects[@]}"
"${launcher[@]}" "$cxx" "${flags[@]}" "${san[@]}" -fsanitize=fuzzer "$root/tests/fuzz/${target}_fuzz.cpp" \
  "$work/libocto_fuzz.a" "${libs[@]}" -o "$work/${target}_fuzz"

# Seeds, regenerated each run; new inputs go to corpus/TARGET (kept between runs).
rm -rf "$work/seeds/$target"
mkdir -p "$work/seeds" "$work/corpus/$target" "$work/artifacts/$target"
if [ "$target" = gguf ]; then
  "${launcher[@]}" "$cxx" "${flags[@]}" "${san[@]}" "$root/tests/fuzz/gguf_seeds.cpp" "$work/libocto_fuzz.a" \
    "${libs[@]}" -o "$work/gguf_seeds"
  "$work/gguf_seeds" "$work/seeds/gguf" >&2
else
  if [ ! -x "$work/fuzz_seeds" ] || [ "$root/tests/fuzz/fuzz_seeds.cpp" -nt "$work/fuzz_seeds" ]; then
    "${launcher[@]}" "$cxx" "${flags[@]}" "${san[@]}" "$root/tests/fuzz/fuzz_seeds.cpp" "$work/libocto_fuzz.a" \
      "${libs[@]}" -o "$work/fuzz_seeds"
  fi
  ASAN_OPTIONS=detect_leaks=0 "$work/fuzz_seeds" "$root" "$work/seeds.new" >&2
  for t in "$work"/seeds.new/*/; do
    n=$(basename "$t")
    [ "$n" = "$target" ] && { rm -rf "$work/seeds/$n"; mv "$t" "$work/seeds/$n"; }
  done
  rm -rf "$work/seeds.new"
fi
corpora=("$work/corpus/$target" "$work/seeds/$target")
[ -d "$root/tests/fuzz/regressions/$target" ] && corpora+=("$root/tests/fuzz/regressions/$target")
dict=()
[ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict")
exec "$work/${target}_fuzz" "${corpora[@]}" -max_total_time="$seconds" -max_len="${OCTO_FUZZ_MAX_LEN:-65536}" \
  -timeout=10 -rss_limit_mb=2048 "${dict[@]}" -artifact_prefix="$work/artifacts/$target/" -print_final_stats=1
