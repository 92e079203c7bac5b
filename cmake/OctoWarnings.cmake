# Warnings as errors for octo's own targets only (never pushed onto consumers).
function(octo_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
endfunction()
