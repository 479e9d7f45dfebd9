#include "api/sam2rt_c.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/feature_file.h"
#include "api/sam2rt_c_internal.h"
#include "backends/make_backend.h"
#include "core/error.h"

using sam2rt::c_api::guarded;

namespace {

sam2rt::ModelSource source_of(const char* variant, const char* config_yaml) {
  sam2rt::ModelSource source;
  source.variant = variant ? variant : "tiny";
  if (config_yaml) source.config_path = config_yaml;
  return source;
}

sam2rt_model* new_model(const sam2rt::ModelSource& source, const char* device) {
  const sam2rt::DeviceChoice choice = sam2rt::parse_device(device ? device : "cpu");
  return new sam2rt_model{sam2rt::Sam2Model::load(source, sam2rt::make_backend(choice.kind, choice.gpu_index)),
                          source.describe()};
}

sam2rt::MaskFill mask_fill_of(const sam2rt_predictor_options& options) {
  if (!std::isfinite(options.mask_threshold)) throw sam2rt::Error("mask_threshold must be a finite number");
  auto check_area = [](double area, const char* name) {
    if (!(area >= 0) || !std::isfinite(area)) {
      throw sam2rt::Error(std::string(name) + " must be a finite number >= 0, got " + std::to_string(area));
    }
  };
  check_area(options.max_hole_area, "max_hole_area");
  check_area(options.max_sprinkle_area, "max_sprinkle_area");
  return sam2rt::MaskFill{options.mask_threshold, options.max_hole_area, options.max_sprinkle_area};
}

const sam2rt::Predictor& with_image(const sam2rt_predictor* predictor) {
  if (!predictor) throw sam2rt::Error("predictor is NULL");
  if (!predictor->predictor.has_image()) {
    throw sam2rt::Error("no image set: call sam2rt_predictor_set_image_* or sam2rt_predictor_set_features_file first");
  }
  return predictor->predictor;
}

}  // namespace

extern "C" {

const char* sam2rt_last_error(void) { return sam2rt::c_api::last_error().c_str(); }

const char* sam2rt_version(void) { return SAM2RT_VERSION_STRING; }

sam2rt_model* sam2rt_model_load(const char* checkpoint_path, const char* variant, const char* config_yaml) {
  return sam2rt_model_load_on_device(checkpoint_path, variant, config_yaml, nullptr);
}

sam2rt_model* sam2rt_model_synthetic(uint64_t salt, const char* variant, const char* config_yaml) {
  return sam2rt_model_synthetic_on_device(salt, variant, config_yaml, nullptr);
}

sam2rt_model* sam2rt_model_load_on_device(const char* checkpoint_path, const char* variant, const char* config_yaml,
                                          const char* device) {
  return guarded(
      [&]() -> sam2rt_model* {
        if (!checkpoint_path) throw sam2rt::Error("checkpoint_path is NULL");
        sam2rt::ModelSource source = source_of(variant, config_yaml);
        source.checkpoint_path = checkpoint_path;
        return new_model(source, device);
      },
      nullptr);
}

sam2rt_model* sam2rt_model_synthetic_on_device(uint64_t salt, const char* variant, const char* config_yaml,
                                               const char* device) {
  return guarded(
      [&]() -> sam2rt_model* {
        sam2rt::ModelSource source = source_of(variant, config_yaml);
        source.synthetic_salt = salt;
        return new_model(source, device);
      },
      nullptr);
}

void sam2rt_model_free(sam2rt_model* model) { delete model; }

sam2rt_predictor_options sam2rt_predictor_options_default(void) {
  const sam2rt::MaskFill fill;
  return sam2rt_predictor_options{fill.threshold, fill.max_hole_area, fill.max_sprinkle_area};
}

sam2rt_predictor* sam2rt_predictor_new(const sam2rt_model* model) {
  return sam2rt_predictor_new_with_options(model, nullptr);
}

sam2rt_predictor* sam2rt_predictor_new_with_options(const sam2rt_model* model, const sam2rt_predictor_options* options) {
  return guarded(
      [&]() -> sam2rt_predictor* {
        if (!model) throw sam2rt::Error("model is NULL");
        const sam2rt::MaskFill fill = mask_fill_of(options ? *options : sam2rt_predictor_options_default());
        return new sam2rt_predictor{sam2rt::Predictor(model->model, fill), model->description};
      },
      nullptr);
}

void sam2rt_predictor_free(sam2rt_predictor* predictor) { delete predictor; }

int sam2rt_predictor_set_image_file(sam2rt_predictor* predictor, const char* path) {
  return guarded(
      [&] {
        if (!predictor || !path) throw sam2rt::Error("predictor or path is NULL");
        predictor->predictor.set_image(sam2rt::decode_image_file(path));
        return 0;
      },
      1);
}

int sam2rt_predictor_set_image_rgb(sam2rt_predictor* predictor, const uint8_t* rgb, int32_t width, int32_t height) {
  return guarded(
      [&] {
        if (!predictor) throw sam2rt::Error("predictor is NULL");
        predictor->predictor.set_image(sam2rt::c_api::rgb_image(rgb, width, height));
        return 0;
      },
      1);
}

int sam2rt_predictor_image_size(const sam2rt_predictor* predictor, int32_t* width, int32_t* height) {
  return guarded(
      [&] {
        if (!width || !height) throw sam2rt::Error("width or height is NULL");
        const sam2rt::Predictor& p = with_image(predictor);
        *width = p.orig_width();
        *height = p.orig_height();
        return 0;
      },
      1);
}

int sam2rt_predictor_save_features(const sam2rt_predictor* predictor, const char* path) {
  return guarded(
      [&] {
        if (!path) throw sam2rt::Error("path is NULL");
        const sam2rt::Predictor& p = with_image(predictor);
        // The decoder-ready tensors, downloaded first when they are on a device.
        sam2rt::EncoderOutputs decoder_ready;
        decoder_ready.decoder = p.features();
        sam2rt::write_feature_file(path, decoder_ready,
                                   sam2rt::identify_model(p.model().config(), p.model().weights()),
                                   predictor->model_description, p.orig_width(), p.orig_height(),
                                   sam2rt::FeatureFileOptions{});
        return 0;
      },
      1);
}

int sam2rt_predictor_set_features_file(sam2rt_predictor* predictor, const char* path) {
  return guarded(
      [&] {
        if (!predictor || !path) throw sam2rt::Error("predictor or path is NULL");
        // Refused (naming both sides) when another model made them; the predictor then keeps its image.
        predictor->predictor.set_features(sam2rt::read_feature_file(path));
        return 0;
      },
      1);
}

int sam2rt_predict(const sam2rt_predictor* predictor, const float* points_xy, const int32_t* labels,
                   int32_t num_points, const float* box, int32_t multimask, sam2rt_masks* out) {
  return guarded(
      [&] {
        if (!out) throw sam2rt::Error("out is NULL");
        if (num_points < 0 || (num_points > 0 && (!points_xy || !labels))) {
          throw sam2rt::Error("points_xy and labels must hold num_points entries");
        }
        const sam2rt::Predictor& p = with_image(predictor);
        sam2rt::Prompt prompt;
        for (int32_t i = 0; i < num_points; ++i) {
          prompt.points.push_back({points_xy[2 * i], points_xy[2 * i + 1], labels[i]});
        }
        if (box) prompt.box = std::array<float, 4>{box[0], box[1], box[2], box[3]};
        const sam2rt::MaskPrediction result = p.predict(prompt, multimask != 0);
        const size_t bytes = static_cast<size_t>(result.masks.numel()) * sizeof(float);
        auto* logits = static_cast<float*>(std::malloc(bytes));
        if (!logits) throw std::bad_alloc();
        std::memcpy(logits, result.masks.data(), bytes);
        *out = sam2rt_masks{};
        out->num_masks = static_cast<int32_t>(result.masks.dim(0));
        out->height = static_cast<int32_t>(result.masks.dim(1));
        out->width = static_cast<int32_t>(result.masks.dim(2));
        out->logits = logits;
        std::copy_n(result.iou_predictions.begin(), std::min<size_t>(3, result.iou_predictions.size()),
                    out->iou_predictions);
        out->object_score_logit = result.object_score_logit;
        return 0;
      },
      1);
}

void sam2rt_masks_free(sam2rt_masks* masks) {
  if (!masks) return;
  std::free(masks->logits);
  masks->logits = nullptr;
}

}  // extern "C"
