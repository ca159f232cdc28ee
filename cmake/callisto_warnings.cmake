# One place for warning flags, applied per target so third-party code is never affected.
function(callisto_warnings target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                             -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                             -Wnull-dereference -Wimplicit-fallthrough
                                             # An error a [[nodiscard]] function returns
                                             # ("" or why not) is never dropped unseen.
                                             -Werror=unused-result)
    if(CALLISTO_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()
