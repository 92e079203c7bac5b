// libFuzzer target for the IR's JSON reader: any text must parse or give an error value; a program that
// parses is validated, and one that validates must print back to the same program.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "octo/ir/json.hpp"
#include "octo/ir/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = octo::ir::from_json(text);
  if (!r) return 0;
  const auto v = octo::ir::validate(*r.value);
  const std::string once = octo::ir::to_json(*r.value);
  const auto back = octo::ir::from_json(once);
  if (!back || octo::ir::to_json(*back.value) != once) __builtin_trap();
  (void)v;
  return 0;
}
