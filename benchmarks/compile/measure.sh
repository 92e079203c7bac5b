#!/bin/bash
# Compile seconds and peak RSS of the compile-time benchmarks, one JSON line each.
# usage: benchmarks/compile/measure.sh [extra g++ flags...]   (run from the repository root)
# Each case is compiled first with g++'s default constexpr limits ("default_limits_ok"); a case that
# fails there is timed again with -fconstexpr-ops-limit raised (reported in "constexpr_ops_limit").
# Operation counts: benchmarks/compile/ops.sh bisects them.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-g++}
compile() {  # limit ("" = default), source, flags... ; sets ok, wall, user, rss
  local limit=$1 src=$2; shift 2
  local flags=(-std=c++20 -fsyntax-only -I"$root/include" "$@")
  [ -n "$limit" ] && flags+=(-fconstexpr-ops-limit="$limit")
  local log; log=$(mktemp)
  if /usr/bin/time -v "$cxx" "${flags[@]}" "$root/benchmarks/compile/$src" 2>"$log" >/dev/null; then ok=true; else ok=false; fi
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  user=$(grep "User time" "$log" | awk '{print $NF}')
  rss=$(( $(grep "Maximum resident set size" "$log" | awk '{print $NF}') / 1024 ))
  rm -f "$log"
}
run() {  # name, source, flags...
  local name=$1 src=$2; shift 2
  compile "" "$src" "$@"
  local default_ok=$ok limit=default
  if [ "$default_ok" = false ]; then limit=1000000000; compile "$limit" "$src" "$@"; fi
  echo "{\"name\": \"$name\", \"default_limits_ok\": $default_ok, \"ok\": $ok, \"wall_s\": $wall, \"user_s\": $user, \"peak_rss_mb\": $rss, \"constexpr_ops_limit\": \"$limit\", \"compiler\": \"$($cxx -dumpfullversion)\"}"
}
for n in 256 1024 4096; do
  run "synthetic_${n}_nodes" synthetic.cpp -DOCTO_NODES=$n
done
run "qwen2_5_7b_decode_step" decode_7b.cpp
run "qwen3_8b_decode_step" decode_7b.cpp -DOCTO_MODEL=qwen3_8b
