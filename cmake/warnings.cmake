# Warnings for every moonmq target: moonmq_warnings(<target>).
function(moonmq_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wno-unused-parameter)
endfunction()
