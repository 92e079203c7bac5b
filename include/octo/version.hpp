// octo's release version, as compiled into octo::core.
// Use it to report which library a binary runs on.
#pragma once

#include <string_view>

namespace octo {

/// The version of the linked octo::core, e.g. "0.1.0".
std::string_view version() noexcept;

}  // namespace octo
