#include "io/base64.h"

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_decode(std::string_view text, const std::string& origin) {
  std::string bytes;
  bytes.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int pending_bits = 0;
  size_t padding = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int value = base64_value(c);
    if (value < 0 || padding > 0) {
      throw Error(origin + " is not valid base64 (a character outside A-Z, a-z, 0-9, +, / or data after '=')");
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    pending_bits += 6;
    if (pending_bits >= 8) {
      pending_bits -= 8;
      bytes.push_back(static_cast<char>((bits >> pending_bits) & 0xFFu));
    }
  }
  // 2 or 4 bits left over are the padding of a 2- or 1-byte tail; 6 cannot happen in whole bytes.
  if (padding > 2 || pending_bits >= 6) throw Error(origin + " is not valid base64 (its length is not whole bytes)");
  return bytes;
}

std::string base64_encode(const std::vector<uint8_t>& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest) {
    const uint32_t v = (uint32_t{bytes[i]} << 16) | (rest == 2 ? uint32_t{bytes[i + 1]} << 8 : 0u);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace sam2rt
