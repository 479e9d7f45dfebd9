#pragma once

#include <memory>

#include "backends/backend.h"
#include "model/features.h"
#include "model/low_rank_mask_decoder.h"

namespace sam2rt {

// One image as SamHeads decodes it (SamHeads::prepare_image). Either the
// low-rank fast path's per-image state (a model decoded on the CPU), with the
// reference decoder's features made from it on the first prompt that needs
// them (one with a mask input), or only the features on the reference
// decoder's backend (a device's: every prompt is decoded there, so setting an
// image does no CPU decoder work and needs no host features). Copies share one
// state. Valid while the SamHeads that made it lives.
class HeadsImage {
 public:
  HeadsImage() = default;
  // Features on the reference decoder's backend.
  explicit HeadsImage(DeviceDecoderFeatures reference);
  // The fast path's state and the features it was made from (NCHW, shared, not
  // copied), from which reference() makes the reference decoder's on `cpu`.
  HeadsImage(DecoderImageState low_rank, DecoderFeatures features, std::shared_ptr<Backend> cpu);

  bool empty() const { return shared_ == nullptr; }
  bool has_low_rank() const;
  // Error without one.
  const DecoderImageState& low_rank() const;
  // The image's features on the reference decoder's backend, made on the
  // first call for an image of the fast path (thread-safe).
  const DeviceDecoderFeatures& reference() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace sam2rt
