# The octo port (overlay port; see docs/packaging.md). The source is a local checkout: $OCTO_SOURCE_DIR
# if set, else the folder two levels above this port (the repository this port lives in). A registry
# port would fetch a release instead:
#   vcpkg_from_github(OUT_SOURCE_PATH SOURCE_PATH REPO <owner>/octo REF "v${VERSION}" SHA512 <sha512> HEAD_REF main)
if(DEFINED ENV{OCTO_SOURCE_DIR} AND NOT "$ENV{OCTO_SOURCE_DIR}" STREQUAL "")
  file(REAL_PATH "$ENV{OCTO_SOURCE_DIR}" SOURCE_PATH)
else()
  file(REAL_PATH "${CURRENT_PORT_DIR}/../.." SOURCE_PATH)
endif()
if(NOT EXISTS "${SOURCE_PATH}/CMakeLists.txt" OR NOT EXISTS "${SOURCE_PATH}/include/octo.hpp")
  message(FATAL_ERROR "octo: '${SOURCE_PATH}' is not an octo checkout (set OCTO_SOURCE_DIR to one)")
endif()

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

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include" "${CURRENT_PACKAGES_DIR}/debug/share")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
if(EXISTS "${SOURCE_PATH}/LICENSE")
  vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
else()
  # The repository has no LICENSE file yet; vcpkg requires a copyright file, so say so plainly.
  file(WRITE "${CURRENT_PACKAGES_DIR}/share/${PORT}/copyright"
       "octo: no license file in the source repository yet; see the project for terms.\n")
endif()
