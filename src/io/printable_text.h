#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sam2rt {

// Text taken from an input (a zip entry name, a tensor key, a YAML scalar, a
// prompt) for quoting in an error message: control and non-ASCII bytes become
// '?', so the message stays one printable line, and text longer than
// max_length is cut with "...".
std::string printable(std::string_view text, size_t max_length = 200);

}  // namespace sam2rt
