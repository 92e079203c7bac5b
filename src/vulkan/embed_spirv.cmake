# cmake -DSPV=in.spv -DOUT=out.cpp -DID=c_identifier -P embed_spirv.cmake: SPIR-V words as a C++ array.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR rem "${n} % 8")
if(n EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV}: not a SPIR-V module (size not a multiple of 4 bytes)")
endif()
# SPIR-V is little-endian words on every target octo builds for; swap each 4-byte group into a literal.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "(0x........u,0x........u,0x........u,0x........u,0x........u,0x........u,0x........u,0x........u,)" "\\1\n" words "${words}")
math(EXPR count "${n} / 8")
file(WRITE ${OUT}.tmp "// Generated from ${SPV}\n#include <cstddef>\n#include <cstdint>\nextern const std::uint32_t octo_spirv_${ID}[];\nextern const std::size_t octo_spirv_${ID}_words;\nconst std::uint32_t octo_spirv_${ID}[] = {\n${words}\n};\nconst std::size_t octo_spirv_${ID}_words = ${count};\n")
file(RENAME ${OUT}.tmp ${OUT})
