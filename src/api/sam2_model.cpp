#include "api/sam2_model.h"

#include "core/error.h"
#include "io/checkpoint.h"
#include "model/memory_weights.h"
#include "model/synthetic_weights.h"

namespace sam2rt {

// The encoder, made first, checks the config and every weight of the image
// path (model/image_encoder.cpp) before anything reads them: checked here too,
// the model's 39M (Tiny) weights were read twice at every start.
Sam2Model::Sam2Model(ModelConfig config, WeightMap weights, std::shared_ptr<Backend> backend)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(std::move(backend)),
      encoder_(backend_ ? ImageEncoder(config_, weights_, backend_) : ImageEncoder(config_, weights_)),
      heads_(config_, weights_, backend_) {}

WeightMap Sam2Model::load_weights(const ModelSource& source, const ModelConfig& config, bool video) {
  if (source.synthetic_salt) {
    WeightMap weights = synthetic_weights(config, *source.synthetic_salt);
    if (video) {
      const WeightMap memory = synthetic_memory_weights(config, *source.synthetic_salt);
      for (const auto& [key, tensor] : memory.all()) weights.insert(key, tensor);
    }
    return weights;
  }
  if (source.checkpoint_path.empty()) {
    throw Error("no weights given: pass --model FILE.pt (official SAM 2.1 checkpoint) or --synthetic-weights SALT");
  }
  return load_checkpoint(source.checkpoint_path);
}

std::shared_ptr<const Sam2Model> Sam2Model::load(const ModelSource& source, std::shared_ptr<Backend> backend,
                                                 bool video) {
  ModelConfig config = source.resolve_config();
  WeightMap weights = load_weights(source, config, video);
  return std::make_shared<const Sam2Model>(std::move(config), std::move(weights), std::move(backend));
}

}  // namespace sam2rt
