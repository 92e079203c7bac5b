# Finds zstd's library (compressed layer files of decomposed models) as the imported target octo::zstd.
# Installed next to octoConfig.cmake so a consumer of a static octo_core finds the same library again.
#
# Order: a target that already exists; zstd's own CMake config (upstream, vcpkg, Debian's libzstd-dev),
# shared library first; Conan's zstd::libzstd; the system library and header.
if(TARGET octo::zstd)
  set(octo_zstd_FOUND TRUE)
  return()
endif()

find_package(zstd CONFIG QUIET)
foreach(octo_zstd_candidate IN ITEMS zstd::libzstd_shared zstd::libzstd_static zstd::libzstd)
  if(TARGET ${octo_zstd_candidate})
    add_library(octo::zstd INTERFACE IMPORTED)
    set_target_properties(octo::zstd PROPERTIES INTERFACE_LINK_LIBRARIES ${octo_zstd_candidate})
    set(octo_zstd_FOUND TRUE)
    return()
  endif()
endforeach()

find_library(OCTO_ZSTD_LIBRARY NAMES zstd zstd_static)
find_path(OCTO_ZSTD_INCLUDE_DIR NAMES zstd.h)
mark_as_advanced(OCTO_ZSTD_LIBRARY OCTO_ZSTD_INCLUDE_DIR)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(octo_zstd REQUIRED_VARS OCTO_ZSTD_LIBRARY OCTO_ZSTD_INCLUDE_DIR)

if(octo_zstd_FOUND AND NOT TARGET octo::zstd)
  add_library(octo::zstd UNKNOWN IMPORTED)
  set_target_properties(octo::zstd PROPERTIES
    IMPORTED_LOCATION "${OCTO_ZSTD_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OCTO_ZSTD_INCLUDE_DIR}")
endif()
