# The one place that finds octo's dependencies. Each is looked for as a package manager gives it first
# (Conan's CMakeDeps, vcpkg, an upstream CMake config), and as Debian's packages give it last, and ends
# up as one target name the build links to:
#
#   octo_find_dependency(nlohmann_json)    nlohmann_json::nlohmann_json  (config: Conan, vcpkg, Debian)
#   octo_find_dependency(pcre2)            PCRE2::8BIT       PCRE2 config (Conan, vcpkg, upstream), else
#                                                            libpcre2-8 + pcre2.h (Debian has no config)
#   octo_find_dependency(zstd)             octo::zstd     -> zstd::libzstd_shared/_static/libzstd (config:
#                                                            vcpkg, Conan, Debian), else libzstd + zstd.h
#   octo_find_dependency(xxhash)           octo::xxhash   -> xxHash::xxhash (Conan, vcpkg, upstream), else
#                                                            xxhash.h (Debian); octo uses it header-only
#   octo_find_dependency(vulkan_headers)   Vulkan::Headers   VulkanHeaders config (Conan, vcpkg, Debian's
#                                                            libvulkan-dev), else CMake's FindVulkan
#   octo_find_dependency(glslc)            OCTO_GLSLC        the program: a path given by the packager
#                                                            (the vcpkg port), CMAKE_PROGRAM_PATH (Conan's
#                                                            tool_requires), else PATH (Debian's glslc)
#
# With REQUIRED a missing dependency is a configure error; without it, octo_<name>_FOUND says.
# Installed next to octoConfig.cmake: a static octo_core's consumers find its private link
# dependencies (pcre2, zstd) again through the same code.
include_guard(GLOBAL)

macro(octo_find_dependency octo_dep_name)
  cmake_parse_arguments(octo_dep "REQUIRED" "" "" ${ARGN})
  set(octo_${octo_dep_name}_FOUND FALSE)
  if(NOT COMMAND _octo_find_${octo_dep_name})
    message(FATAL_ERROR "octo_find_dependency: unknown dependency '${octo_dep_name}'")
  endif()
  cmake_language(CALL _octo_find_${octo_dep_name})
  if(octo_dep_REQUIRED AND NOT octo_${octo_dep_name}_FOUND)
    message(FATAL_ERROR "octo: dependency '${octo_dep_name}' not found (${_octo_find_hint_${octo_dep_name}})")
  endif()
endmacro()

set(_octo_find_hint_nlohmann_json "Debian: nlohmann-json3-dev; Conan: nlohmann_json; vcpkg: nlohmann-json")
macro(_octo_find_nlohmann_json)
  if(NOT TARGET nlohmann_json::nlohmann_json)
    find_package(nlohmann_json 3.10 CONFIG QUIET)
  endif()
  if(TARGET nlohmann_json::nlohmann_json)
    set(octo_nlohmann_json_FOUND TRUE)
  endif()
endmacro()

set(_octo_find_hint_pcre2 "Debian: libpcre2-dev; Conan and vcpkg: pcre2")
macro(_octo_find_pcre2)
  if(NOT TARGET PCRE2::8BIT)
    find_package(PCRE2 CONFIG QUIET COMPONENTS 8BIT)
  endif()
  if(NOT TARGET PCRE2::8BIT)
    find_library(OCTO_PCRE2_LIBRARY NAMES pcre2-8 pcre2-8-static)
    find_path(OCTO_PCRE2_INCLUDE_DIR NAMES pcre2.h)
    mark_as_advanced(OCTO_PCRE2_LIBRARY OCTO_PCRE2_INCLUDE_DIR)
    if(OCTO_PCRE2_LIBRARY AND OCTO_PCRE2_INCLUDE_DIR)
      add_library(PCRE2::8BIT UNKNOWN IMPORTED)
      set_target_properties(PCRE2::8BIT PROPERTIES
        IMPORTED_LOCATION "${OCTO_PCRE2_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${OCTO_PCRE2_INCLUDE_DIR}")
      if(OCTO_PCRE2_LIBRARY MATCHES "\\.a$")
        # A static PCRE2 must not mark its symbols dllimport (matters on Windows; harmless elsewhere).
        set_property(TARGET PCRE2::8BIT APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS PCRE2_STATIC)
      endif()
    endif()
  endif()
  if(TARGET PCRE2::8BIT)
    set(octo_pcre2_FOUND TRUE)
  endif()
endmacro()

set(_octo_find_hint_zstd "Debian: libzstd-dev; Conan and vcpkg: zstd")
macro(_octo_find_zstd)
  if(NOT TARGET octo::zstd)
    find_package(zstd CONFIG QUIET)
    # Shared first where a config offers both (Debian's); Conan and vcpkg define the one they built.
    foreach(octo_zstd_candidate IN ITEMS zstd::libzstd_shared zstd::libzstd_static zstd::libzstd)
      if(TARGET ${octo_zstd_candidate})
        add_library(octo::zstd INTERFACE IMPORTED)
        set_target_properties(octo::zstd PROPERTIES INTERFACE_LINK_LIBRARIES ${octo_zstd_candidate})
        break()
      endif()
    endforeach()
  endif()
  if(NOT TARGET octo::zstd)
    find_library(OCTO_ZSTD_LIBRARY NAMES zstd zstd_static)
    find_path(OCTO_ZSTD_INCLUDE_DIR NAMES zstd.h)
    mark_as_advanced(OCTO_ZSTD_LIBRARY OCTO_ZSTD_INCLUDE_DIR)
    if(OCTO_ZSTD_LIBRARY AND OCTO_ZSTD_INCLUDE_DIR)
      add_library(octo::zstd UNKNOWN IMPORTED)
      set_target_properties(octo::zstd PROPERTIES
        IMPORTED_LOCATION "${OCTO_ZSTD_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${OCTO_ZSTD_INCLUDE_DIR}")
    endif()
  endif()
  if(TARGET octo::zstd)
    set(octo_zstd_FOUND TRUE)
  endif()
endmacro()

# Header-only use (XXH_INLINE_ALL): octo::xxhash carries the include directory only, so nothing of
# xxHash is linked or exported.
set(_octo_find_hint_xxhash "Debian: libxxhash-dev; Conan and vcpkg: xxhash")
macro(_octo_find_xxhash)
  if(NOT TARGET octo::xxhash)
    find_package(xxHash CONFIG QUIET)
    if(TARGET xxHash::xxhash)
      add_library(octo::xxhash INTERFACE IMPORTED)
      set_target_properties(octo::xxhash PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "$<TARGET_PROPERTY:xxHash::xxhash,INTERFACE_INCLUDE_DIRECTORIES>")
    else()
      find_path(OCTO_XXHASH_INCLUDE_DIR NAMES xxhash.h)
      mark_as_advanced(OCTO_XXHASH_INCLUDE_DIR)
      if(OCTO_XXHASH_INCLUDE_DIR)
        add_library(octo::xxhash INTERFACE IMPORTED)
        # A compiler's own include directory (Debian's /usr/include) must not come back as -isystem:
        # that breaks libstdc++'s #include_next.
        if(NOT OCTO_XXHASH_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES AND
           NOT OCTO_XXHASH_INCLUDE_DIR STREQUAL "/usr/include")
          set_target_properties(octo::xxhash PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${OCTO_XXHASH_INCLUDE_DIR}")
        endif()
      endif()
    endif()
  endif()
  if(TARGET octo::xxhash)
    set(octo_xxhash_FOUND TRUE)
  endif()
endmacro()

# Headers only: the loader is opened at run time (vk::DynamicLoader), nothing of Vulkan is linked.
set(_octo_find_hint_vulkan_headers "Debian: libvulkan-dev; Conan and vcpkg: vulkan-headers")
macro(_octo_find_vulkan_headers)
  if(NOT TARGET Vulkan::Headers)
    find_package(VulkanHeaders CONFIG QUIET)
  endif()
  if(NOT TARGET Vulkan::Headers)
    find_package(Vulkan QUIET)
  endif()
  if(TARGET Vulkan::Headers)
    set(octo_vulkan_headers_FOUND TRUE)
  endif()
endmacro()

set(_octo_find_hint_glslc "Debian: glslc; Conan and vcpkg: shaderc; or set OCTO_GLSLC")
macro(_octo_find_glslc)
  find_program(OCTO_GLSLC glslc)
  if(OCTO_GLSLC)
    set(octo_glslc_FOUND TRUE)
  endif()
endmacro()
