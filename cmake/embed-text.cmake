# Writes OUT, a C file defining NAME[] (the bytes of IN, then a 0) and
# NAME_len (their count, without the 0): a text file built into a program.
# usage: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed-text.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR len "${digits} / 2")
# Sixteen bytes a line.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x..," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
get_filename_component(base "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* ${base}, made by cmake/embed-text.cmake: do not edit. */\n"
  "#include <stddef.h>\n\n"
  "extern const unsigned char ${NAME}[];\n"
  "extern const size_t ${NAME}_len;\n\n"
  "const unsigned char ${NAME}[] = {\n    ${bytes}0\n};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
