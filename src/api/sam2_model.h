#pragma once

#include <memory>

#include "api/model_source.h"
#include "backends/backend.h"
#include "core/weights.h"
#include "model/config.h"
#include "model/image_encoder.h"
#include "model/sam_heads.h"

namespace sam2rt {

// A loaded SAM 2.1 image model: config, validated weights, the image encoder
// and the prompt/mask heads. Immutable once built, so one instance can serve
// many predictors (and threads).
class Sam2Model {
 public:
  // The image encoder and the mask decoder (every prompt) run
  // on `backend` (the CPU when null).
  // Generated weights are the image path's unless `video` asks for the video
  // modules' too (a checkpoint has them all).
  static std::shared_ptr<const Sam2Model> load(const ModelSource& source, std::shared_ptr<Backend> backend = nullptr,
                                               bool video = false);
  // The weights `source` names: generated (synthetic) or read from its checkpoint
  // (memory-mapped where the format allows). load() is this plus the constructor.
  static WeightMap load_weights(const ModelSource& source, const ModelConfig& config, bool video = false);
  Sam2Model(ModelConfig config, WeightMap weights, std::shared_ptr<Backend> backend = nullptr);

  const ModelConfig& config() const { return config_; }
  const WeightMap& weights() const { return weights_; }
  const ImageEncoder& encoder() const { return encoder_; }
  const SamHeads& heads() const { return heads_; }
  // Where the model runs: the backend it was built with (null: the CPU). The
  // video tracker's memory modules run there too.
  const std::shared_ptr<Backend>& backend() const { return backend_; }

 private:
  ModelConfig config_;
  WeightMap weights_;
  std::shared_ptr<Backend> backend_;
  ImageEncoder encoder_;
  SamHeads heads_;
};

}  // namespace sam2rt
