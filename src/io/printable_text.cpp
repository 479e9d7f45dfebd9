#include "io/printable_text.h"

namespace sam2rt {

std::string printable(std::string_view text, size_t max_length) {
  std::string out;
  const bool cut = text.size() > max_length;
  for (char c : cut ? text.substr(0, max_length) : text) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (cut) out += "...";
  return out;
}

}  // namespace sam2rt
