#pragma once

#include <cstdint>

namespace sam2rt {

// Per-thread scratch memory kept between calls, for the row blocks of the
// decoder: fresh memory costs a page fault per 4 KiB (~11 us here), more than the
// arithmetic a block does on it, and a std::vector would zero it first.
// `slot` (0 .. kThreadScratchSlots-1) names a buffer; its memory is valid until
// the next call for the same slot on the same thread. Contents are undefined.
inline constexpr int kThreadScratchSlots = 6;
float* thread_scratch(int slot, int64_t count);

}  // namespace sam2rt
