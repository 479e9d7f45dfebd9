#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace sam2rt {

// A constant table [height, width, channels] that is cheaper to compute row by
// row than to store (the Hiera position embedding): a CPU backend adds it one
// row at a time, a device backend computes it once and keeps it resident.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual Shape shape() const = 0;
  // out [width * channels] = row y of the table.
  virtual void row(int64_t y, float* out) const = 0;
};

}  // namespace sam2rt
