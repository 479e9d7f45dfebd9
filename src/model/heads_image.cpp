#include "model/heads_image.h"

#include <utility>

#include "core/error.h"

namespace sam2rt {

struct HeadsImage::Shared {
  DeviceDecoderFeatures device;
  DecoderImageState cpu;
};

HeadsImage::HeadsImage(DecoderImageState cpu) : shared_(std::make_shared<const Shared>(Shared{{}, std::move(cpu)})) {}

HeadsImage::HeadsImage(DeviceDecoderFeatures device) {
  if (device.image_embed.empty()) throw Error("no features on the device");
  shared_ = std::make_shared<const Shared>(Shared{std::move(device), {}});
}

bool HeadsImage::on_device() const { return !device().image_embed.empty(); }

const DeviceDecoderFeatures& HeadsImage::device() const {
  if (empty()) throw Error("no image set: call set_image or set_features before predicting");
  return shared_->device;
}

const DecoderImageState& HeadsImage::cpu() const {
  if (on_device()) throw Error("this image is on the device: the device decoder decodes its prompts");
  return shared_->cpu;
}

}  // namespace sam2rt
