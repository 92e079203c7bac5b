# The octo port. Its source is an archive pinned by SHA512, as a registry port's is, so vcpkg's ABI hash
# (which covers every file of this folder) changes whenever the source does and a binary cache never
# serves a stale build. The pin is source.cmake next to this file:
#   OCTO_SOURCE_SHA512    the archive's SHA512
#   OCTO_SOURCE_URLS      where a registry's copy of this port downloads the release archive, or
#   OCTO_SOURCE_ARCHIVE   an archive in this folder (a development overlay port)
# The repository holds no source.cmake (a tree cannot pin itself): tools/vcpkg_overlay_port.sh writes an
# overlay port for a checkout (an archive of its library sources and its hash), and a registry's copy
# names the release, e.g.
#   set(OCTO_SOURCE_URLS "https://github.com/octo-authors/octo/archive/refs/tags/v${VERSION}.tar.gz")
#   set(OCTO_SOURCE_SHA512 <sha512 of that archive>)
if(NOT EXISTS "${CMAKE_CURRENT_LIST_DIR}/source.cmake")
  message(FATAL_ERROR "octo: this port has no source.cmake; make an overlay port for your checkout with "
                      "tools/vcpkg_overlay_port.sh <dir> and use --overlay-ports=<dir> (docs/packaging.md)")
endif()
include("${CMAKE_CURRENT_LIST_DIR}/source.cmake")
if(DEFINED OCTO_SOURCE_URLS)
  vcpkg_download_distfile(archive
    URLS ${OCTO_SOURCE_URLS}
    FILENAME "octo-${VERSION}.tar.gz"
    SHA512 "${OCTO_SOURCE_SHA512}")
else()
  set(archive "${CMAKE_CURRENT_LIST_DIR}/${OCTO_SOURCE_ARCHIVE}")
  file(SHA512 "${archive}" actual_sha512)
  if(NOT actual_sha512 STREQUAL OCTO_SOURCE_SHA512)
    message(FATAL_ERROR "octo: ${archive} has SHA512 ${actual_sha512}, source.cmake pins ${OCTO_SOURCE_SHA512}")
  endif()
endif()
vcpkg_extract_source_archive(SOURCE_PATH ARCHIVE "${archive}")

set(options "")
if("vcpkg-dependencies" IN_LIST FEATURES)
  # glslc is a build-time tool only: the SPIR-V is embedded in the library.
  list(APPEND options "-DOCTO_GLSLC=${CURRENT_HOST_INSTALLED_DIR}/tools/shaderc/glslc${VCPKG_HOST_EXECUTABLE_SUFFIX}")
endif()

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DOCTO_BUILD_TESTS=OFF
    -DOCTO_BUILD_EXAMPLES=OFF
    -DOCTO_BUILD_BENCHMARKS=OFF
    -DOCTO_BUILD_TOOLS=OFF
    -DOCTO_WARNINGS_AS_ERRORS=OFF
    ${options}
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH lib/cmake/octo)

# The license goes to share/octo/copyright (vcpkg's place); the copy the CMake install put in
# share/octo/LICENSE would be a duplicate.
file(REMOVE "${CURRENT_PACKAGES_DIR}/share/${PORT}/LICENSE")
file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include" "${CURRENT_PACKAGES_DIR}/debug/share")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
