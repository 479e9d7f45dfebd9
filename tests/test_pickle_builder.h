#pragma once

// Test-only writer of pickle byte streams, opcode by opcode, for the checkpoint
// tests and the fuzz seeds.

#include <cstdint>
#include <string>
#include <vector>

namespace sam2rt::testing {

// Hand assembly of pickle opcodes, the way torch.save (protocol 2) or a
// protocol 4 pickler would emit them.
class PickleBytes {
 public:
  PickleBytes& op(uint8_t code) {
    bytes_.push_back(code);
    return *this;
  }
  PickleBytes& raw(const std::string& text) {
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
  }
  PickleBytes& le(uint64_t value, int count) {
    for (int i = 0; i < count; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  PickleBytes& str(const std::string& text) { return op('X').le(text.size(), 4).raw(text); }
  PickleBytes& short_str(const std::string& text) { return op(0x8c).le(text.size(), 1).raw(text); }
  PickleBytes& integer(int64_t value) {
    if (value >= 0 && value < 256) return op('K').le(static_cast<uint64_t>(value), 1);
    if (value >= 0 && value < 65536) return op('M').le(static_cast<uint64_t>(value), 2);
    return op(0x8a).le(8, 1).le(static_cast<uint64_t>(value), 8);
  }
  PickleBytes& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleBytes& int_tuple(const std::vector<int64_t>& values) {
    op('(');
    for (int64_t v : values) integer(v);
    return op('t');
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace sam2rt::testing
