#include "model/heads_image.h"

#include <mutex>
#include <utility>

#include "core/error.h"
#include "kernels/buffer_pool.h"
#include "kernels/layout.h"

namespace sam2rt {

struct HeadsImage::Shared {
  DeviceDecoderFeatures reference;
  // With the fast path's state: it, the features it was made from and the
  // backend reference() makes the reference decoder's features on.
  DecoderImageState low_rank;
  DecoderFeatures features;
  std::shared_ptr<Backend> cpu;
  std::once_flag reference_made;
};

namespace {

void require_image(const void* shared) {
  if (shared == nullptr) throw Error("no image set: call set_image or set_features before predicting");
}

}  // namespace

HeadsImage::HeadsImage(DeviceDecoderFeatures reference) {
  if (reference.image_embed.empty()) throw Error("no features on the device");
  shared_ = std::make_shared<Shared>();
  shared_->reference = std::move(reference);
}

HeadsImage::HeadsImage(DecoderImageState low_rank, DecoderFeatures features, std::shared_ptr<Backend> cpu)
    : shared_(std::make_shared<Shared>()) {
  shared_->low_rank = std::move(low_rank);
  shared_->features = std::move(features);
  shared_->cpu = std::move(cpu);
}

bool HeadsImage::has_low_rank() const {
  require_image(shared_.get());
  return shared_->cpu != nullptr;
}

const DecoderImageState& HeadsImage::low_rank() const {
  if (!has_low_rank()) throw Error("this image is on the device: the reference decoder decodes its prompts");
  return shared_->low_rank;
}

const DeviceDecoderFeatures& HeadsImage::reference() const {
  require_image(shared_.get());
  Shared& s = *shared_;
  if (s.cpu != nullptr) {
    // The fast path's channels-last copies serve as they are (the CPU
    // backend's tensors share host memory); feat_s0, which the fast path keeps
    // as planar taps, is laid out again on recycled memory.
    std::call_once(s.reference_made, [&s] {
      const Shape& s0 = s.features.feat_s0.shape();
      const Shape& s1 = s.features.feat_s1.shape();
      const Shape& embed = s.features.image_embed.shape();
      Tensor feat_s0 = BufferPool::shared().tensor({s0[2] * s0[3], s0[1]});
      nchw_to_hwc_into(s.features.feat_s0, feat_s0);
      s.reference = {s.cpu->input(s.low_rank.image_embed.reshaped({embed[2], embed[3], embed[1]})),
                     s.cpu->input(s.low_rank.feat_s1.reshaped({s1[2], s1[3], s1[1]})),
                     s.cpu->input(feat_s0.reshaped({s0[2], s0[3], s0[1]}))};
    });
  }
  return s.reference;
}

}  // namespace sam2rt
