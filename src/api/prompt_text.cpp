#include "api/prompt_text.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

namespace {

std::vector<float> parse_numbers(const std::string& text, const std::string& what) {
  std::vector<float> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string field = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const char* begin = field.c_str();
    char* end = nullptr;
    const float value = std::strtof(begin, &end);
    if (field.empty() || end == begin || *end != '\0' || !std::isfinite(value)) {
      throw Error(what + " '" + printable(text) + "': '" + printable(field) + "' is not a finite number");
    }
    values.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
    if (values.size() > 8) break;
  }
  return values;
}

}  // namespace

PointPrompt parse_point(const std::string& text) {
  const std::vector<float> v = parse_numbers(text, "--point");
  if (v.size() != 2 && v.size() != 3) throw Error("--point '" + printable(text) + "': expected X,Y or X,Y,LABEL");
  PointPrompt point{v[0], v[1], 1};
  if (v.size() == 3) {
    if (v[2] != 0.0f && v[2] != 1.0f) {
      throw Error("--point '" + printable(text) + "': LABEL must be 1 (object) or 0 (background)");
    }
    point.label = static_cast<int>(v[2]);
  }
  return point;
}

std::array<float, 4> parse_box(const std::string& text) {
  const std::vector<float> v = parse_numbers(text, "--box");
  if (v.size() != 4) throw Error("--box '" + printable(text) + "': expected X0,Y0,X1,Y1");
  return {v[0], v[1], v[2], v[3]};
}

}  // namespace sam2rt
