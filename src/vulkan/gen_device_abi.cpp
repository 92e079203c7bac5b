// Build step: writes the GLSL side of device_abi.hpp (octo_device_abi.glsl) to the path given, only
// when its text changes (so shaders rebuild only on a real ABI change).
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "device_abi.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: gen_device_abi OUT.glsl\n";
    return 2;
  }
  std::ostringstream text;
  octo::vm::vulkan::write_device_abi_glsl(text);
  std::ifstream old(argv[1], std::ios::binary);
  if (old && std::string(std::istreambuf_iterator<char>(old), {}) == text.str()) return 0;
  old.close();
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text.str();
  if (!out) {
    std::cerr << "gen_device_abi: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
