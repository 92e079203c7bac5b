#!/bin/sh
# expect_failure.sh SECONDS PATTERN COMMAND...: COMMAND (an mpirun job) must fail, not time out, within
# SECONDS, and print a line matching the extended regex PATTERN.
limit=$1; pattern=$2; shift 2
out=$(mktemp)
start=$(date +%s)
timeout "$limit" "$@" >"$out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$out"
if [ "$rc" -eq 124 ]; then echo "FAIL: the job still ran after $limit s (a hang)"; rm -f "$out"; exit 1; fi
if [ "$rc" -eq 0 ]; then echo "FAIL: the job succeeded"; rm -f "$out"; exit 1; fi
if ! grep -Eq "$pattern" "$out"; then echo "FAIL: no line matches '$pattern'"; rm -f "$out"; exit 1; fi
rm -f "$out"
echo "ok: failed with exit $rc after $took s"
