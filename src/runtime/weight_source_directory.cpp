// Placeholder until the decomposed-directory storage (src/stream) is committed: a directory model is
// refused with one line; GGUF models stream.
#include "octo/error.hpp"
#include "weight_source.hpp"

namespace octo::runtime::detail {

std::unique_ptr<weight_source> open_directory_source(const std::filesystem::path& dir, std::int64_t) {
  throw octo::error("octo: '" + dir.string() + "': decomposed directories need octo's stream storage, not in this build");
}

}  // namespace octo::runtime::detail
