#include "api/sam2rt_c.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "api/predictor.h"
#include "core/error.h"

struct sam2rt_model {
  std::shared_ptr<const sam2rt::Sam2Model> model;
};

struct sam2rt_predictor {
  sam2rt::Predictor predictor;
};

namespace {

thread_local std::string last_error;

template <typename F>
auto guarded(F&& body, decltype(body()) failure) -> decltype(body()) {
  try {
    last_error.clear();
    return body();
  } catch (const std::bad_alloc&) {
    last_error = "out of memory";
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return failure;
}

sam2rt::ModelSource source_of(const char* variant, const char* config_yaml) {
  sam2rt::ModelSource source;
  source.variant = variant ? variant : "tiny";
  if (config_yaml) source.config_path = config_yaml;
  return source;
}

}  // namespace

extern "C" {

const char* sam2rt_last_error(void) { return last_error.c_str(); }

sam2rt_model* sam2rt_model_load(const char* checkpoint_path, const char* variant, const char* config_yaml) {
  return guarded(
      [&]() -> sam2rt_model* {
        if (!checkpoint_path) throw sam2rt::Error("checkpoint_path is NULL");
        sam2rt::ModelSource source = source_of(variant, config_yaml);
        source.checkpoint_path = checkpoint_path;
        return new sam2rt_model{sam2rt::Sam2Model::load(source)};
      },
      nullptr);
}

sam2rt_model* sam2rt_model_synthetic(uint64_t salt, const char* variant, const char* config_yaml) {
  return guarded(
      [&]() -> sam2rt_model* {
        sam2rt::ModelSource source = source_of(variant, config_yaml);
        source.synthetic_salt = salt;
        return new sam2rt_model{sam2rt::Sam2Model::load(source)};
      },
      nullptr);
}

void sam2rt_model_free(sam2rt_model* model) { delete model; }

sam2rt_predictor* sam2rt_predictor_new(const sam2rt_model* model) {
  return guarded(
      [&]() -> sam2rt_predictor* {
        if (!model) throw sam2rt::Error("model is NULL");
        return new sam2rt_predictor{sam2rt::Predictor(model->model)};
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
        if (!predictor || !rgb) throw sam2rt::Error("predictor or rgb is NULL");
        if (width <= 0 || height <= 0 || static_cast<int64_t>(width) * height > sam2rt::kDefaultMaxImagePixels) {
          throw sam2rt::Error("image size " + std::to_string(width) + "x" + std::to_string(height) +
                              " is empty or above the pixel limit");
        }
        sam2rt::RgbImage image;
        image.width = width;
        image.height = height;
        image.pixels.assign(rgb, rgb + static_cast<size_t>(width) * height * 3);
        predictor->predictor.set_image(image);
        return 0;
      },
      1);
}

int sam2rt_predict(const sam2rt_predictor* predictor, const float* points_xy, const int32_t* labels,
                   int32_t num_points, const float* box, int32_t multimask, sam2rt_masks* out) {
  return guarded(
      [&] {
        if (!predictor || !out) throw sam2rt::Error("predictor or out is NULL");
        if (num_points < 0 || (num_points > 0 && (!points_xy || !labels))) {
          throw sam2rt::Error("points_xy and labels must hold num_points entries");
        }
        sam2rt::Prompt prompt;
        for (int32_t i = 0; i < num_points; ++i) {
          prompt.points.push_back({points_xy[2 * i], points_xy[2 * i + 1], labels[i]});
        }
        if (box) prompt.box = std::array<float, 4>{box[0], box[1], box[2], box[3]};
        const sam2rt::MaskPrediction result = predictor->predictor.predict(prompt, multimask != 0);
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
