#!/bin/bash
# Compile seconds and peak RSS of the compile-time benchmarks, one JSON line each.
# usage: benchmarks/compile/measure.sh [extra g++ flags...]   (run from the repository root)
# The ops limit is raised (and reported) where a case needs more than g++'s default of 33554432.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-g++}
run() {  # name, limit ("" = default), source, defines...
  local name=$1 limit=$2 src=$3; shift 3
  local flags=(-std=c++20 -fsyntax-only -I"$root/include" "$@")
  [ -n "$limit" ] && flags+=(-fconstexpr-ops-limit="$limit")
  local log; log=$(mktemp)
  if /usr/bin/time -v "$cxx" "${flags[@]}" "$root/benchmarks/compile/$src" 2>"$log" >/dev/null; then ok=true; else ok=false; fi
  local secs rss user
  secs=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  user=$(grep "User time" "$log" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
  echo "{\"name\": \"$name\", \"ok\": $ok, \"wall_s\": $secs, \"user_s\": $user, \"peak_rss_mb\": $((rss / 1024)), \"constexpr_ops_limit\": \"${limit:-default}\", \"compiler\": \"$($cxx -dumpfullversion)\"}"
  rm -f "$log"
}
for n in 256 1024 4096; do
  run "synthetic_${n}_nodes" "${OCTO_OPS_LIMIT:-}" synthetic.cpp -DOCTO_NODES=$n
done
run "qwen2_5_7b_decode_step_default_limit" "" decode_7b.cpp
run "qwen2_5_7b_decode_step" 1000000000 decode_7b.cpp
