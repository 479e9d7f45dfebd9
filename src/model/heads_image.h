#pragma once

#include <memory>

#include "model/features.h"
#include "model/mask_decoder.h"

namespace sam2rt {

// One image as SamHeads decodes it (SamHeads::prepare_image): its features on
// the device decoder's backend, when the model has one (every prompt is
// decoded there, so setting an image does no CPU decoder work and needs no
// host features), else the CPU decoder's per-image state
// (MaskDecoder::prepare_image: channels-last copies, the transformer's
// image-side projections). Copies share one state. Valid while the SamHeads
// that made it lives.
class HeadsImage {
 public:
  HeadsImage() = default;
  explicit HeadsImage(DecoderImageState cpu);
  explicit HeadsImage(DeviceDecoderFeatures device);

  bool empty() const { return shared_ == nullptr; }
  bool on_device() const;
  // Empty for an image of the CPU decoder.
  const DeviceDecoderFeatures& device() const;
  // Error for an image on the device.
  const DecoderImageState& cpu() const;

 private:
  struct Shared;
  std::shared_ptr<const Shared> shared_;
};

}  // namespace sam2rt
