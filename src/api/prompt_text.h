#pragma once

#include <array>
#include <string>

#include "model/prompt.h"

namespace sam2rt {

// Parses the CLI's prompt syntax. Numbers are decimal floats; anything else
// (empty fields, trailing text, NaN/Inf, labels other than 0/1) is an Error
// that quotes the text.
PointPrompt parse_point(const std::string& text);             // "X,Y" or "X,Y,LABEL" (label defaults to 1)
std::array<float, 4> parse_box(const std::string& text);      // "X0,Y0,X1,Y1"

}  // namespace sam2rt
