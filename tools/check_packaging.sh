#!/usr/bin/env bash
# Checks both packaging routes from a clean copy of this checkout (run on request, not in CI):
#   1. Conan: `conan create` of conan/ with its test_package, static and shared; then a consumer project
#      exactly as the README shows it (conanfile.txt + find_package(octo) + octo::octo, the profile's own
#      compiler.cppstd, no extra flags) installs, builds and runs.
#   2. vcpkg: an overlay port for the copy (tools/vcpkg_overlay_port.sh), `vcpkg install octo[core]`,
#      the binary cache restoring that build for the same tree and refusing it for a changed one, and
#      examples/vcpkg_consumer (manifest mode) configured, built and run against it.
# The copy is `git archive` of HEAD, or of `git stash create` when tracked files have uncommitted changes
# (untracked files are not copied). Everything happens in a temporary directory that is removed at the
# end (OCTO_PACKAGING_KEEP=1 keeps it); the checkout is checked to be unchanged. Every command is
# printed before it runs ("+ ..."), with the versions of the tools.
#
# Tools, from these environment variables:
#   OCTO_CONAN          a Conan 2 command (default: `conan` on PATH), or
#   OCTO_CONAN_SRC      a Conan 2 source tree, run as /usr/bin/python3 with PYTHONPATH=OCTO_CONAN_SRC
#   OCTO_CONAN_PROFILE  the profile added to the detected one (default: conan/profiles/debian12, whose
#                       [platform_requires] versions are checked against dpkg; with it Conan runs with
#                       --no-remote). Use "none" to resolve the requirements from your remotes instead.
#   OCTO_VCPKG          a vcpkg executable (default: $VCPKG_ROOT/vcpkg, else `vcpkg` on PATH), or
#   OCTO_VCPKG_TOOL_SRC a vcpkg-tool source tree built here (with OCTO_FMT_SRC and OCTO_CMRC_SRC: fmt and
#                       CMakeRC sources, as FetchContent would download them) into OCTO_VCPKG_BUILD_DIR
#                       (default: inside the temporary directory)
#   VCPKG_ROOT          a vcpkg registry checkout (scripts/, triplets/, ports/vcpkg-cmake*); read only
#   OCTO_PACKAGING_CCACHE=1  compile through ccache (Conan and vcpkg builds)
#   OCTO_PACKAGING_JOBS parallel jobs (default 2)
#   OCTO_PACKAGING_ONLY conan | vcpkg (default: both)
#
# The vcpkg triplet: the default x64-linux post-build step fixes ELF RPATHs with a patchelf it downloads
# (Debian's is too old), which fails offline. The check uses an overlay triplet, x64-linux-offline =
# x64, static libraries, release only, VCPKG_FIXUP_ELF_RPATH OFF (a static package has no RPATHs to fix).
# The port's default feature vcpkg-dependencies takes the dependencies from vcpkg (downloads); the check
# builds octo[core] against the system's (Debian's) instead.
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
jobs=${OCTO_PACKAGING_JOBS:-2}
only=${OCTO_PACKAGING_ONLY:-all}

say() { printf '\n=== %s\n' "$*"; }
run() { printf '+ %s\n' "$*" >&2; "$@"; }
die() { echo "check_packaging.sh: $*" >&2; exit 1; }

tmp=$(mktemp -d /tmp/octo-packaging.XXXXXX)
cleanup() {
  if [[ ${OCTO_PACKAGING_KEEP:-0} == 1 ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# ---- the clean copy -----------------------------------------------------------------------------------
say "clean copy of $checkout"
status_before=$(git -C "$checkout" status --porcelain --untracked-files=all)
ref=$(git -C "$checkout" stash create)
if [[ -n $ref ]]; then
  echo "uncommitted changes to tracked files: copying them too (git stash create: $ref)"
else
  ref=HEAD
fi
echo "copy of $(git -C "$checkout" rev-parse --short HEAD) ($(git -C "$checkout" log -1 --format=%s HEAD | cut -c1-72))"
src="$tmp/src"
mkdir -p "$src"
run git -C "$checkout" archive --format=tar -o "$tmp/src.tar" "$ref"
run tar -xf "$tmp/src.tar" -C "$src"
rm -f "$tmp/src.tar"

say "versions"
run cmake --version | sed -n 1p
run "${CXX:-c++}" --version | sed -n 1p
if command -v dpkg-query >/dev/null; then
  dpkg-query -W -f='${Package} ${Version}\n' nlohmann-json3-dev libpcre2-dev libzstd-dev libxxhash-dev \
    libvulkan-dev glslc 2>/dev/null || true
fi

launcher=()
if [[ ${OCTO_PACKAGING_CCACHE:-0} == 1 ]]; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache  # CMake's default for new build trees
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# ---- Conan ----------------------------------------------------------------------------------------------
check_conan() {
  local conan
  if [[ -n ${OCTO_CONAN:-} ]]; then
    conan=("$OCTO_CONAN")
  elif [[ -n ${OCTO_CONAN_SRC:-} ]]; then
    conan=(env "PYTHONPATH=$OCTO_CONAN_SRC" /usr/bin/python3 -c
           'import sys; from conans.conan import run; sys.argv[0] = "conan"; run()')
  elif command -v conan >/dev/null; then
    conan=(conan)
  else
    die "no Conan: set OCTO_CONAN or OCTO_CONAN_SRC"
  fi
  export CONAN_HOME="$tmp/conan-home"
  say "Conan (CONAN_HOME=$CONAN_HOME, fresh)"
  run "${conan[@]}" --version
  run "${conan[@]}" profile detect
  local profile=${OCTO_CONAN_PROFILE:-$src/conan/profiles/debian12}
  local profiles=(-pr:h default -pr:b default) remote=()
  if [[ $profile != none ]]; then
    profiles=(-pr:h default -pr:h "$profile" -pr:b default)
    remote=(--no-remote)
    if [[ $profile == "$src/conan/profiles/debian12" ]]; then
      # Each platform requirement must be the version Debian actually ships.
      local pkg ref deb
      for pkg in nlohmann_json:nlohmann-json3-dev pcre2:libpcre2-dev zstd:libzstd-dev xxhash:libxxhash-dev \
                 vulkan-headers:libvulkan-dev shaderc:glslc; do
        ref=$(grep "^${pkg%%:*}/" "$profile" | cut -d/ -f2)
        deb=$(dpkg-query -W -f='${Version}' "${pkg#*:}" 2>/dev/null) || die "${pkg#*:} is not installed"
        deb=${deb#*:}; deb=${deb%%-*}; deb=${deb%%+*}
        [[ $ref == "$deb" || $ref == "$deb.0" ]] || die "profile says ${pkg%%:*}/$ref, dpkg says ${pkg#*:} $deb"
        echo "platform requirement ${pkg%%:*}/$ref = Debian's ${pkg#*:} $deb"
      done
    fi
    run cat "$profile"
  fi
  local common=("${profiles[@]}" "${remote[@]}" --build=missing -c "tools.build:jobs=$jobs")
  local linkage
  for linkage in False True; do
    say "conan create, shared=$linkage"
    run "${conan[@]}" create "$src/conan" "${common[@]}" -o "octo/*:shared=$linkage" \
      -c "tools.cmake.cmake_layout:test_folder=$tmp/test_package-$linkage"
  done
  run "${conan[@]}" list 'octo/*:*'

  say "Conan consumer as the README shows it (profile's compiler.cppstd: $(
    sed -n 's/^compiler.cppstd=//p' "$CONAN_HOME/profiles/default"))"
  local consumer="$tmp/conan-consumer"
  mkdir -p "$consumer"
  cp "$src/tests/consumer/main.cpp" "$consumer/"
  cat >"$consumer/conanfile.txt" <<'EOF'
[requires]
octo/0.1.0
[generators]
CMakeDeps
CMakeToolchain
[layout]
cmake_layout
EOF
  cat >"$consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(my_app LANGUAGES CXX)
find_package(octo CONFIG REQUIRED)
add_executable(my_app main.cpp)
target_link_libraries(my_app PRIVATE octo::octo)
EOF
  run cat "$consumer/conanfile.txt" "$consumer/CMakeLists.txt"
  (cd "$consumer" &&
   run "${conan[@]}" install . "${profiles[@]}" "${remote[@]}" --build=missing &&
   run cmake --preset conan-release &&
   run cmake --build --preset conan-release &&
   run ./build/Release/my_app)
}

# ---- vcpkg ----------------------------------------------------------------------------------------------
check_vcpkg() {
  [[ -n ${VCPKG_ROOT:-} && -f $VCPKG_ROOT/scripts/buildsystems/vcpkg.cmake ]] ||
    die "set VCPKG_ROOT to a vcpkg registry checkout (scripts/, triplets/, ports/vcpkg-cmake*)"
  local vcpkg
  if [[ -n ${OCTO_VCPKG:-} ]]; then
    vcpkg=$OCTO_VCPKG
  elif [[ -n ${OCTO_VCPKG_TOOL_SRC:-} ]]; then
    local build=${OCTO_VCPKG_BUILD_DIR:-$tmp/vcpkg-tool-build}
    say "building vcpkg-tool from $OCTO_VCPKG_TOOL_SRC into $build"
    [[ -n ${OCTO_FMT_SRC:-} && -n ${OCTO_CMRC_SRC:-} ]] || die "OCTO_VCPKG_TOOL_SRC needs OCTO_FMT_SRC and OCTO_CMRC_SRC"
    run cmake -S "$OCTO_VCPKG_TOOL_SRC" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DVCPKG_DEVELOPMENT_WARNINGS=OFF -DVCPKG_LIBCURL_DLSYM=OFF -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
      -DFETCHCONTENT_SOURCE_DIR_FMT="$OCTO_FMT_SRC" -DFETCHCONTENT_SOURCE_DIR_CMAKERC="$OCTO_CMRC_SRC" \
      "${launcher[@]}" >"$tmp/vcpkg-tool-configure.log"
    run cmake --build "$build" -j "$jobs" >"$tmp/vcpkg-tool-build.log"
    vcpkg=$build/vcpkg
  elif [[ -x $VCPKG_ROOT/vcpkg ]]; then
    vcpkg=$VCPKG_ROOT/vcpkg
  elif command -v vcpkg >/dev/null; then
    vcpkg=$(command -v vcpkg)
  else
    die "no vcpkg: set OCTO_VCPKG or OCTO_VCPKG_TOOL_SRC"
  fi
  export VCPKG_FORCE_SYSTEM_BINARIES=1 VCPKG_DISABLE_METRICS=1
  say "vcpkg (VCPKG_ROOT=$VCPKG_ROOT, read only)"
  run "$vcpkg" version | sed -n 1p
  echo "registry: $(git -C "$VCPKG_ROOT" log -1 --format='%h %cs' 2>/dev/null || echo "not a git checkout")"
  # A scratch root: the toolchain file runs <root>/vcpkg, and nothing is written into VCPKG_ROOT.
  local root="$tmp/vcpkg-root" entry
  mkdir -p "$root"
  cp -r "$VCPKG_ROOT/scripts" "$VCPKG_ROOT/triplets" "$VCPKG_ROOT/.vcpkg-root" "$root/"
  for entry in ports versions LICENSE.txt; do
    [[ ! -e $VCPKG_ROOT/$entry ]] || ln -s "$VCPKG_ROOT/$entry" "$root/$entry"
  done
  cp "$vcpkg" "$root/vcpkg"
  vcpkg=$root/vcpkg
  export VCPKG_ROOT=$root
  echo "scratch root $root: copies of scripts/, triplets/ and the vcpkg executable, ports/ linked"

  local triplets="$tmp/vcpkg-triplets"
  mkdir -p "$triplets"
  {
    echo "# x64-linux-release without the ELF RPATH fix-up (it downloads patchelf; none offline)"
    echo "set(VCPKG_TARGET_ARCHITECTURE x64)"
    echo "set(VCPKG_CRT_LINKAGE dynamic)"
    echo "set(VCPKG_LIBRARY_LINKAGE static)"
    echo "set(VCPKG_CMAKE_SYSTEM_NAME Linux)"
    echo "set(VCPKG_BUILD_TYPE release)"
    echo "set(VCPKG_FIXUP_ELF_RPATH OFF)"
    if [[ ${OCTO_PACKAGING_CCACHE:-0} == 1 ]]; then
      echo "set(VCPKG_CMAKE_CONFIGURE_OPTIONS -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)"
      echo "set(VCPKG_ENV_PASSTHROUGH HOME CCACHE_DIR CCACHE_BASEDIR CCACHE_NOHASHDIR)"
    fi
  } >"$triplets/x64-linux-offline.cmake"
  run cat "$triplets/x64-linux-offline.cmake"

  say "overlay port for the copy"
  run "$src/tools/vcpkg_overlay_port.sh" "$tmp/overlay" "$src"
  run cat "$tmp/overlay/octo/source.cmake"

  local cache="$tmp/vcpkg-binary-cache"
  mkdir -p "$cache"
  export VCPKG_BINARY_SOURCES="clear;files,$cache,readwrite"
  echo "VCPKG_BINARY_SOURCES=$VCPKG_BINARY_SOURCES"
  local roots=(--x-buildtrees-root="$tmp/vcpkg-buildtrees" --x-packages-root="$tmp/vcpkg-packages"
               --downloads-root="$tmp/vcpkg-downloads" --overlay-triplets="$triplets"
               --triplet=x64-linux-offline --host-triplet=x64-linux-offline)
  say "vcpkg install octo[core] (classic mode)"
  (cd "$tmp" && run "$vcpkg" install "octo[core]" --overlay-ports="$tmp/overlay" \
     --x-install-root="$tmp/vcpkg-installed" "${roots[@]}")
  run find "$tmp/vcpkg-installed/x64-linux-offline/share/octo" "$tmp/vcpkg-installed/x64-linux-offline/lib" -type f
  run grep -E 'source.cmake|octo-.*-src.tar.gz' "$tmp/vcpkg-installed/x64-linux-offline/share/octo/vcpkg_abi_info.txt"

  say "the binary cache: the same tree is restored, a changed tree is not"
  run "$vcpkg" install "octo[core]" --overlay-ports="$tmp/overlay" --x-install-root="$tmp/vcpkg-installed-2" \
    "${roots[@]}" --only-binarycaching 2>&1 | tee "$tmp/vcpkg-same.log"
  echo "// a changed source" >>"$src/src/version.cpp"
  run "$src/tools/vcpkg_overlay_port.sh" "$tmp/overlay-changed" "$src"
  if run "$vcpkg" install "octo[core]" --overlay-ports="$tmp/overlay-changed" \
       --x-install-root="$tmp/vcpkg-installed-3" "${roots[@]}" --only-binarycaching >"$tmp/vcpkg-changed.log" 2>&1; then
    cat "$tmp/vcpkg-changed.log"
    die "vcpkg restored a cached octo for a changed source tree"
  fi
  grep -E '^octo:|^error' "$tmp/vcpkg-changed.log" || true
  local abi_same abi_changed
  abi_same=$(sed -n 's/^octo:.* package ABI: //p' "$tmp/vcpkg-same.log")
  abi_changed=$(sed -n 's/^octo:.* package ABI: //p' "$tmp/vcpkg-changed.log")
  [[ -n $abi_same && -n $abi_changed && $abi_same != "$abi_changed" ]] ||
    die "expected two different octo ABIs, got '$abi_same' and '$abi_changed'"
  echo "as it must: the same tree was restored (ABI $abi_same); the changed tree has ABI $abi_changed,"
  echo "which the cache does not hold (--only-binarycaching refused to build it)"

  say "examples/vcpkg_consumer (manifest mode)"
  local consumer="$tmp/vcpkg-consumer"
  cp -r "$src/examples/vcpkg_consumer" "$consumer"
  printf '{\n  "overlay-ports": [\n    "%s"\n  ]\n}\n' "$tmp/overlay" >"$consumer/vcpkg-configuration.json"
  run cat "$consumer/vcpkg-configuration.json"
  run cmake -S "$consumer" -B "$tmp/vcpkg-consumer-build" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$VCPKG_ROOT/scripts/buildsystems/vcpkg.cmake" \
    -DVCPKG_TARGET_TRIPLET=x64-linux-offline -DVCPKG_HOST_TRIPLET=x64-linux-offline \
    -DVCPKG_OVERLAY_TRIPLETS="$triplets" -DVCPKG_MANIFEST_NO_DEFAULT_FEATURES=ON \
    -DVCPKG_INSTALLED_DIR="$tmp/vcpkg-consumer-installed" \
    "-DVCPKG_INSTALL_OPTIONS=--x-buildtrees-root=$tmp/vcpkg-buildtrees;--x-packages-root=$tmp/vcpkg-packages;--downloads-root=$tmp/vcpkg-downloads" \
    "${launcher[@]}"
  run cmake --build "$tmp/vcpkg-consumer-build"
  run "$tmp/vcpkg-consumer-build/octo_vcpkg_consumer"
}

[[ $only == vcpkg ]] || check_conan
[[ $only == conan ]] || check_vcpkg

say "the checkout is unchanged"
status_after=$(git -C "$checkout" status --porcelain --untracked-files=all)
[[ $status_before == "$status_after" ]] || die "the checkout changed: $(diff <(echo "$status_before") <(echo "$status_after"))"
for p in conan/test_package/build conan/build CMakeUserPresets.json conan/CMakeUserPresets.json \
         conan/test_package/CMakeUserPresets.json examples/vcpkg_consumer/vcpkg_installed; do
  [[ ! -e $checkout/$p ]] || die "left behind: $p"
done
echo "git status unchanged; no conan/test_package/build, CMakeUserPresets.json or vcpkg_installed"
say "all packaging checks passed"
