#!/bin/sh
# octo inspect on a GGUF whose key and string value hold terminal escape sequences and a newline: the
# output shows them as \x1b / \n and holds no ESC byte, so a file cannot drive the user's terminal.
# usage: inspect_escapes_test.sh OCTO
exe="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GGUF v3, 0 tensors, 1 key: "k\033]0;pwned\007" (11 bytes) = string "a\033[31mred\nb" (11 bytes)
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000' >"$tmp/e.gguf"
printf '\013\000\000\000\000\000\000\000k\033]0;pwned\007\010\000\000\000' >>"$tmp/e.gguf"
printf '\013\000\000\000\000\000\000\000a\033[31mred\nb' >>"$tmp/e.gguf"
"$exe" inspect "$tmp/e.gguf" >"$tmp/out" 2>&1 || { echo "FAIL: inspect exited nonzero"; cat "$tmp/out"; exit 1; }
if grep -q "$(printf '\033')" "$tmp/out"; then
  echo "FAIL: an ESC byte reached the output"
  exit 1
fi
grep -q 'k\\x1b\]0;pwned\\x07' "$tmp/out" || { echo "FAIL: key not escaped:"; cat "$tmp/out"; exit 1; }
grep -q '"a\\x1b\[31mred\\nb"' "$tmp/out" || { echo "FAIL: value not escaped:"; cat "$tmp/out"; exit 1; }
echo "ok: inspect escapes control bytes"
