// The compiled core's version, so a binary can tell which octo it links.
#include "octo/version.hpp"

namespace octo {

std::string_view version() noexcept { return OCTO_VERSION_STRING; }

}  // namespace octo
