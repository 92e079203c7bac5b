# Warnings as errors for octo's own targets only (never pushed onto consumers).
#
# g++ 12 at -O2/-O3 reports std::string / std::vector code in libstdc++ that is correct as
# stringop-overflow, stringop-overread, restrict or array-bounds errors ("bound between
# 9223372036854775810 and 18446744073709551615 exceeds maximum object size"; GCC bugs 105329,
# 105651, 106199). Those four stay on as warnings only in g++ 12, so -Werror does not turn a
# compiler bug into a broken build; every other warning is an error.
#
# Packagers (the Conan recipe, the vcpkg port) turn -Werror off with OCTO_WARNINGS_AS_ERRORS=OFF: a
# compiler newer than the ones octo is tested with may warn about new things, which must not fail the
# package build.
option(OCTO_WARNINGS_AS_ERRORS "Build octo's own targets with -Werror" ON)
function(octo_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(OCTO_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-error=stringop-overflow -Wno-error=stringop-overread
      -Wno-error=restrict -Wno-error=array-bounds)
  endif()
endfunction()
