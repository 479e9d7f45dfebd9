// libFuzzer target: PNG/JPEG decoding and preprocessing on arbitrary bytes (see fuzz_inputs.h).
#include <cstddef>
#include <cstdint>

#include "fuzz_inputs.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sam2rt::fuzz::expect_value_or_error([&] { sam2rt::fuzz::decode_image_bytes_and_preprocess(data, size); });
  return 0;
}
