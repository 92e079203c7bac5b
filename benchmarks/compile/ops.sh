#!/bin/bash
# Estimates the constexpr operation count of a translation unit by bisecting g++'s -fconstexpr-ops-limit
# (the count is per constant evaluation, so this finds the costliest static_assert of the file).
# usage: benchmarks/compile/ops.sh SOURCE [extra g++ flags...]   prints "ops ~N (between LO and HI)"
# OCTO_OPS_PRECISION (default 0.03): relative width at which the bisection stops; OCTO_OPS_START
# (default 4000000): the first limit tried (it doubles until the file compiles).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-g++}
src=$1; shift
prec=${OCTO_OPS_PRECISION:-0.03}
passes() { "$cxx" -std=c++20 -fsyntax-only -I"$root/include" "$@" -fconstexpr-ops-limit="$limit" "$src" >/dev/null 2>&1; }
lo=0 hi=${OCTO_OPS_START:-4000000}
while limit=$hi; ! passes "$@"; do
  lo=$hi; hi=$((hi * 2))
  if [ "$hi" -gt 4000000000 ]; then echo "ops > $lo (or the file does not compile)"; exit 1; fi
done
while [ "$(awk -v l="$lo" -v h="$hi" -v p="$prec" 'BEGIN { print (h - l > p * h) ? 1 : 0 }')" = 1 ]; do
  limit=$(((lo + hi) / 2))
  if passes "$@"; then hi=$limit; else lo=$limit; fi
done
echo "ops ~$hi (between $lo and $hi)"
