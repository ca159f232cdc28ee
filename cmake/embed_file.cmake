# cmake -DINPUT=file -DOUTPUT=source.cpp -DHEADER=dir/x.hpp -DNAMESPACE=a::b -DFUNCTION=name -P embed_file.cmake
# Writes a C++ source defining `std::string_view NAMESPACE::FUNCTION()` that returns INPUT's
# bytes. Every byte becomes a character literal: no xxd, no string-length limits, and any
# content (quotes, backslashes, UTF-8) survives unchanged.
foreach(var INPUT OUTPUT HEADER NAMESPACE FUNCTION)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "embed_file.cmake: ${var} is not set")
    endif()
endforeach()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
if(hex_length EQUAL 0)
    message(FATAL_ERROR "embed_file.cmake: ${INPUT} is empty")
endif()
# 16 bytes per line keeps the generated file readable. (CMake regexes have no {n}.)
string(REPEAT "[0-9a-f]" 32 line)
string(REGEX REPLACE "(${line})" "\\1\n    " hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${INPUT} by cmake/embed_file.cmake. Do not edit.\n"
"#include \"${HEADER}\"\n\n"
"namespace ${NAMESPACE} {\n\n"
"namespace {\n"
"constexpr char embedded_bytes[] = {\n    ${bytes}\n};\n"
"}  // namespace\n\n"
"std::string_view ${FUNCTION}() { return {embedded_bytes, sizeof embedded_bytes}; }\n\n"
"}  // namespace ${NAMESPACE}\n")
# Only a changed document recompiles anything.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
