# Finds PCRE2's 8-bit library (the tokenizers' regexes) as the imported target PCRE2::8BIT, the name
# upstream's pcre2-config.cmake, vcpkg and Conan all give it. Installed next to octoConfig.cmake so a
# consumer of a static octo_core finds the same library again.
#
# Order: a target that already exists; a package manager's / upstream's CMake config; the system
# library and header (Debian's libpcre2-dev ships no CMake config).
if(TARGET PCRE2::8BIT)
  set(octo_pcre2_FOUND TRUE)
  return()
endif()

find_package(PCRE2 CONFIG QUIET COMPONENTS 8BIT)
if(TARGET PCRE2::8BIT)
  set(octo_pcre2_FOUND TRUE)
  return()
endif()

find_library(OCTO_PCRE2_LIBRARY NAMES pcre2-8 pcre2-8-static)
find_path(OCTO_PCRE2_INCLUDE_DIR NAMES pcre2.h)
mark_as_advanced(OCTO_PCRE2_LIBRARY OCTO_PCRE2_INCLUDE_DIR)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(octo_pcre2 REQUIRED_VARS OCTO_PCRE2_LIBRARY OCTO_PCRE2_INCLUDE_DIR)

if(octo_pcre2_FOUND AND NOT TARGET PCRE2::8BIT)
  add_library(PCRE2::8BIT UNKNOWN IMPORTED)
  set_target_properties(PCRE2::8BIT PROPERTIES
    IMPORTED_LOCATION "${OCTO_PCRE2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${OCTO_PCRE2_INCLUDE_DIR}")
  if(OCTO_PCRE2_LIBRARY MATCHES "\\.a$")
    # A static PCRE2 must not mark its symbols dllimport (matters on Windows; harmless elsewhere).
    set_property(TARGET PCRE2::8BIT APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS PCRE2_STATIC)
  endif()
endif()
