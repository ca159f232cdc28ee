# One of Callisto's static libraries: callisto_<name>, linked by the others as
# callisto::<name>, its headers included from the source root ("layer/file.hpp") by it and by
# whatever links it, compiled with the project's warnings.
function(callisto_library name)
    add_library(callisto_${name} STATIC ${ARGN})
    add_library(callisto::${name} ALIAS callisto_${name})
    target_include_directories(callisto_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    callisto_warnings(callisto_${name})
endfunction()
