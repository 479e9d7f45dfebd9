#pragma once

#include <string>
#include <string_view>

namespace sam2rt {

// The bytes of base64 text (RFC 4648's standard alphabet; the '=' padding may be
// left out; spaces and line breaks are skipped). Anything else, data after the
// padding, or a length that is not whole bytes throws Error naming `origin`.
std::string base64_decode(std::string_view text, const std::string& origin);

}  // namespace sam2rt
