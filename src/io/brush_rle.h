#pragma once

#include <cstdint>
#include <vector>

namespace sam2rt {

// Label Studio's brush RLE: the `rle` of a `brushlabels` result, as label-studio-sdk's
// converter/brush.py mask2rle writes it and @thi.ng/rle-pack decodes it in the
// labelling page. The mask's bytes are repeated four times (an RGBA image whose
// every channel holds the mask value) and packed as a bit stream: a 32-bit count
// of values, the word size (8) and the four run-length field widths (3, 4, 8, 16
// bits), then one chunk per run of equal values, padded with zero bits to whole
// bytes (a whole zero byte when already aligned, as brush.py does).
// mask: `pixels` bytes, row-major; Label Studio draws value 255 as the brush.
// Throws Error when 4 * pixels does not fit the 32-bit count.
std::vector<uint8_t> encode_brush_rle(const uint8_t* mask, int64_t pixels);

}  // namespace sam2rt
