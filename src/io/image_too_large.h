#pragma once

#include "core/error.h"

namespace sam2rt {

// Thrown by the image decoders for an image the pixel limit refuses from its
// header, so that a caller can say how to raise the limit.
class ImageTooLarge : public Error {
 public:
  using Error::Error;
};

}  // namespace sam2rt
