#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sam2rt {

// The bytes of base64 text (RFC 4648's standard alphabet; the '=' padding may be
// left out; spaces and line breaks are skipped). Anything else, data after the
// padding, or a length that is not whole bytes throws Error naming `origin`.
std::string base64_decode(std::string_view text, const std::string& origin);

// `bytes` as base64 text (the standard alphabet, '=' padded).
std::string base64_encode(const std::vector<uint8_t>& bytes);

}  // namespace sam2rt
