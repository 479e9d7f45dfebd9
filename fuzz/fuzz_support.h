#pragma once

// What every fuzz target checks besides the sanitizers: bad input may only end
// in sam2rt::Error, and its message must be one non-empty printable line.
// Any other exception escapes and libFuzzer reports it as a crash.

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace sam2rt::fuzz {

inline bool is_one_line(std::string_view message) {
  if (message.empty()) return false;
  for (char c : message) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// Runs `parse`; Error is the expected way to refuse input.
template <typename Parse>
void expect_value_or_error(Parse&& parse) {
  try {
    parse();
  } catch (const Error& error) {
    if (!is_one_line(error.what())) {
      std::fprintf(stderr, "error message is not one printable line: [%s]\n", error.what());
      std::abort();
    }
  }
}

}  // namespace sam2rt::fuzz
