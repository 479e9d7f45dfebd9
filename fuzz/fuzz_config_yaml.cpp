// libFuzzer target: the YAML config reader on arbitrary bytes (see fuzz_inputs.h).
#include <cstddef>
#include <cstdint>

#include "fuzz_inputs.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sam2rt::fuzz::expect_value_or_error([&] { sam2rt::fuzz::parse_config_yaml_bytes(data, size); });
  return 0;
}
