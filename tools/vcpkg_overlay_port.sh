#!/usr/bin/env bash
# Writes a vcpkg overlay port for an octo checkout: OUT_DIR/octo = ports/octo + an archive of the
# checkout's library sources (CMakeLists.txt LICENSE cmake/ include/ src/ shaders/) + source.cmake pinning
# that archive by SHA512. The archive is deterministic (names in C order, fixed times and owners, gzip -n),
# so the same tree gives the same hash and vcpkg's binary cache may reuse a build, while any change to
# the sources changes the hash and with it the port's ABI: vcpkg never restores a stale octo.
#   tools/vcpkg_overlay_port.sh OUT_DIR [SOURCE_DIR]
# SOURCE_DIR (default: the checkout this script is in) may be a git work tree (the files git tracks or
# would track: the working tree, uncommitted changes included) or a plain copy (every file there).
# Then: vcpkg install octo --overlay-ports=OUT_DIR (docs/packaging.md).
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 OUT_DIR [SOURCE_DIR]" >&2; exit 2; }
src=$(cd "${2:-$(dirname "$0")/..}" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
[[ -f "$src/ports/octo/portfile.cmake" && -f "$src/include/octo.hpp" ]] ||
  { echo "$0: $src is not an octo checkout" >&2; exit 1; }
version=$(sed -n 's/^project(octo VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ -n "$version" ]] || { echo "$0: no 'project(octo VERSION x.y.z' in $src/CMakeLists.txt" >&2; exit 1; }
grep -q "\"version\": \"$version\"" "$src/ports/octo/vcpkg.json" ||
  { echo "$0: ports/octo/vcpkg.json's version is not $version (CMakeLists.txt)" >&2; exit 1; }

paths=(CMakeLists.txt LICENSE cmake include src shaders)
list=$(mktemp)
trap 'rm -f "$list"' EXIT
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1 &&
   [[ $(git -C "$src" rev-parse --show-toplevel) == "$src" ]]; then
  # Tracked and untracked-but-not-ignored files that exist (a deleted, uncommitted file is left out).
  git -C "$src" ls-files -z --cached --others --exclude-standard -- "${paths[@]}" |
    (cd "$src" && while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s\0' "$f"; done) |
    LC_ALL=C sort -z >"$list"
else
  (cd "$src" && find "${paths[@]}" -type f -print0) | LC_ALL=C sort -z >"$list"
fi

port="$out/octo"
rm -rf "$port"
mkdir -p "$port"
cp "$src/ports/octo/vcpkg.json" "$src/ports/octo/portfile.cmake" "$src/ports/octo/usage" "$port/"
archive="octo-$version-src.tar.gz"
(cd "$src" && tar --null --files-from="$list" --mtime=@0 --owner=0 --group=0 --numeric-owner \
   --mode='u+rw,go+r,go-w' --format=gnu --transform="s,^,octo-$version/," -cf -) | gzip -9n >"$port/$archive"
sha512=$(sha512sum "$port/$archive" | cut -d' ' -f1)
cat >"$port/source.cmake" <<EOF
# Written by tools/vcpkg_overlay_port.sh from $src ($(tr -cd '\0' <"$list" | wc -c) files).
set(OCTO_SOURCE_ARCHIVE "$archive")
set(OCTO_SOURCE_SHA512 "$sha512")
EOF
echo "$port: octo $version, $archive, SHA512 ${sha512:0:16}..."
