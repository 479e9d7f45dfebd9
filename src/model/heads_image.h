#pragma once

#include <functional>
#include <memory>

#include "model/features.h"
#include "model/mask_decoder.h"

namespace sam2rt {

// One image as SamHeads decodes it (SamHeads::prepare_image): its features on
// the device decoder's backend, when the model has one, and the CPU decoder's
// per-image state (MaskDecoder::prepare_image: channels-last copies, the
// transformer's image-side projections). A device decoder decodes every prompt
// without mask input from the former, so the latter may be made on first need
// (a prompt with a mask input) instead of with the image: setting an image then
// does no CPU decoder work and needs no host features. Copies share one state;
// cpu() is thread-safe. Valid while the SamHeads that made it lives.
class HeadsImage {
 public:
  HeadsImage() = default;
  // The CPU state made now.
  explicit HeadsImage(DecoderImageState cpu, DeviceDecoderFeatures device = {});
  // The CPU state made by `prepare_cpu` (given cpu()'s thread count) on the
  // first call of cpu(); called once (again only after it threw).
  HeadsImage(DeviceDecoderFeatures device, std::function<DecoderImageState(int threads)> prepare_cpu);

  bool empty() const { return shared_ == nullptr; }
  // Empty without a device decoder.
  const DeviceDecoderFeatures& device() const;
  // threads: for making it, on the first call.
  const DecoderImageState& cpu(int threads) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace sam2rt
