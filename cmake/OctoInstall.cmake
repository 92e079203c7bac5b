# Install rules and the CMake package: find_package(octo CONFIG) gives octo::octo, octo::headers and
# octo::core. Everything a consumer links transitively is found again by octoConfig.cmake.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(OCTO_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/octo CACHE STRING "Where octoConfig.cmake is installed")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS octo_headers octo_core octo_octo EXPORT octoTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT octoTargets NAMESPACE octo:: DESTINATION ${OCTO_INSTALL_CMAKEDIR})

get_target_property(octo_core_type octo_core TYPE)
set(OCTO_CORE_IS_STATIC OFF)
if(octo_core_type STREQUAL "STATIC_LIBRARY")
  set(OCTO_CORE_IS_STATIC ON)
endif()
# Subdirectories that link a dependency PRIVATE into octo_core announce it with
#   set_property(GLOBAL APPEND PROPERTY OCTO_STATIC_DEPENDENCIES <name>)
# (a name octo_find_dependency() knows, cmake/OctoDependencies.cmake).
get_property(OCTO_STATIC_DEPENDENCIES GLOBAL PROPERTY OCTO_STATIC_DEPENDENCIES)
list(REMOVE_DUPLICATES OCTO_STATIC_DEPENDENCIES)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/octoConfig.cmake.in
  ${PROJECT_BINARY_DIR}/octoConfig.cmake INSTALL_DESTINATION ${OCTO_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/octoConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
# The find path octoConfig.cmake uses for a static core's private dependencies travels with it.
install(FILES ${PROJECT_BINARY_DIR}/octoConfig.cmake ${PROJECT_BINARY_DIR}/octoConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/OctoDependencies.cmake
  DESTINATION ${OCTO_INSTALL_CMAKEDIR})
# The license (MIT) travels with every installed copy.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/octo)
