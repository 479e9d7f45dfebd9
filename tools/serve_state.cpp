#include "serve_state.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include "api/binary_mask.h"
#include "api/image_cache.h"
#include "core/error.h"
#include "io/base64.h"

namespace sam2rt::cli {

namespace {

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 of an image failed");
  }
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

}  // namespace

Predictor encode_for_prompts(const std::shared_ptr<const Sam2Model>& model, const RgbImage& image,
                             const EncodeOptions& options) {
  Predictor encoder(model);
  encoder.set_image(image, options);
  if (model->heads().decodes_on_device()) return encoder;
  Predictor kept(model);
  kept.set_features(encoder.features(), image.width, image.height);
  return kept;
}

ImagesByContent::ImagesByContent(std::shared_ptr<const Sam2Model> model, int64_t budget_bytes, EncodeGate& gate,
                                 EncodeOptions encode, int64_t max_image_pixels)
    : model_(std::move(model)),
      budget_(budget_bytes),
      gate_(gate),
      encode_options_(encode),
      max_image_pixels_(max_image_pixels) {}

std::shared_ptr<const Predictor> ImagesByContent::encoded(std::string_view image_bytes, const std::string& origin) {
  const std::string key = sha256_hex(image_bytes);
  std::promise<std::shared_ptr<const Predictor>> promise;
  Pending pending;
  bool encodes_here = false;
  {
    std::lock_guard lock(mutex_);
    const auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      by_recency_.splice(by_recency_.begin(), by_recency_, it->second);
      pending = it->second->predictor;
    } else {
      pending = promise.get_future().share();
      by_recency_.push_front(Entry{key, pending, 0});
      by_key_[key] = by_recency_.begin();
      encodes_here = true;
    }
  }
  // Seen before, or being encoded by another request: its predictor (or its error).
  if (!encodes_here) return pending.get();
  try {
    auto predictor = encode(image_bytes, origin);
    {
      std::lock_guard lock(mutex_);
      ++encodes_;
      const auto it = by_key_.find(key);
      if (it != by_key_.end()) {
        it->second->bytes = ImageCache::charge(*predictor);
        bytes_ += it->second->bytes;
        drop_beyond_budget(key);
      }
    }
    promise.set_value(predictor);
    return predictor;
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      const auto it = by_key_.find(key);
      if (it != by_key_.end() && it->second->bytes == 0) {
        by_recency_.erase(it->second);
        by_key_.erase(it);
      }
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::shared_ptr<const Predictor> ImagesByContent::encode(std::string_view image_bytes, const std::string& origin) {
  const auto slot = gate_.enter();
  const RgbImage image = decode_image_bytes(reinterpret_cast<const uint8_t*>(image_bytes.data()), image_bytes.size(),
                                            origin, max_image_pixels_);
  return std::make_shared<const Predictor>(encode_for_prompts(model_, image, encode_options_));
}

// Drops the least recently used encoded images (never `keep`, nor one still being encoded).
void ImagesByContent::drop_beyond_budget(const std::string& keep) {
  auto it = by_recency_.end();
  while (bytes_ > budget_ && it != by_recency_.begin()) {
    --it;
    if (it->key == keep || it->bytes == 0) continue;
    bytes_ -= it->bytes;
    by_key_.erase(it->key);
    it = by_recency_.erase(it);
  }
}

int64_t ImagesByContent::encodes() const {
  std::lock_guard lock(mutex_);
  return encodes_;
}

size_t ImagesByContent::size() const {
  std::lock_guard lock(mutex_);
  return by_key_.size();
}

std::string image_bytes_from_base64_or_data_url(std::string_view text, const std::string& origin) {
  if (text.starts_with("data:")) {
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos || !text.substr(0, comma).ends_with(";base64")) {
      throw Error(origin + " is a data URL without base64 data (expected data:image/png;base64,...)");
    }
    text.remove_prefix(comma + 1);
  }
  std::string bytes = base64_decode(text, origin);
  if (bytes.empty()) throw Error(origin + " is empty");
  return bytes;
}

BestMask predict_best_mask(const Predictor& predictor, const Prompt& prompt, float mask_threshold) {
  const MaskPrediction prediction = predictor.predict(prompt, /*multimask=*/true);
  const auto& ious = prediction.iou_predictions;
  const auto best = std::max_element(ious.begin(), ious.end()) - ious.begin();
  BestMask out;
  out.mask = threshold_mask(prediction.masks, best, mask_threshold);
  out.width = predictor.orig_width();
  out.height = predictor.orig_height();
  out.iou = ious[static_cast<size_t>(best)];
  return out;
}

}  // namespace sam2rt::cli
