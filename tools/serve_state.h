#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/predictor.h"
#include "api/sam2_model.h"
#include "encode_gate.h"
#include "io/image.h"
#include "model/prompt.h"

namespace sam2rt::cli {

// What `sam2rt serve` keeps of an encoded image for prompting: on the CPU only the
// decoder's features (the trunk and neck outputs are several times larger); with
// a decoder on the device, the predictor whose features stayed there.
Predictor encode_for_prompts(const std::shared_ptr<const Sam2Model>& model, const RgbImage& image,
                             const EncodeOptions& options);

// The images the labelling protocols send whole with every click (X-AnyLabeling and
// CVAT their bytes, Label Studio a file that is read again), encoded once and kept by
// the SHA-256 of their bytes, so that a click on an image seen before only decodes.
// Requests for an image that is being encoded wait for that one encode. The least
// recently used images are dropped beyond the budget (the newest always stays).
// Thread-safe.
class ImagesByContent {
 public:
  ImagesByContent(std::shared_ptr<const Sam2Model> model, int64_t budget_bytes, EncodeGate& gate,
                  EncodeOptions encode, int64_t max_image_pixels);

  // The predictor of this image file's bytes (PNG or JPEG); Error when they do not decode.
  std::shared_ptr<const Predictor> encoded(std::string_view image_bytes, const std::string& origin);

  int64_t encodes() const;
  size_t size() const;

 private:
  using Pending = std::shared_future<std::shared_ptr<const Predictor>>;
  struct Entry {
    std::string key;
    Pending predictor;
    int64_t bytes = 0;  // 0 until encoded
  };

  std::shared_ptr<const Predictor> encode(std::string_view image_bytes, const std::string& origin);
  void drop_beyond_budget(const std::string& keep);

  std::shared_ptr<const Sam2Model> model_;
  const int64_t budget_;
  EncodeGate& gate_;
  const EncodeOptions encode_options_;
  const int64_t max_image_pixels_;
  mutable std::mutex mutex_;
  std::list<Entry> by_recency_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  int64_t bytes_ = 0;
  int64_t encodes_ = 0;
};

// The bytes a protocol sends as an image: a data URL ("data:image/png;base64,...")
// or bare base64, as X-AnyLabeling's server accepts both.
std::string image_bytes_from_base64_or_data_url(std::string_view text, const std::string& origin);

// The mask a labelling tool's click asks for: like their SAM 2 servers, three
// candidates and the one with the highest predicted IoU, thresholded (255 = object)
// at the image's size.
struct BestMask {
  std::vector<uint8_t> mask;
  int width = 0;
  int height = 0;
  float iou = 0;
};
BestMask predict_best_mask(const Predictor& predictor, const Prompt& prompt, float mask_threshold);

// What every labelling protocol of `sam2rt serve` shares.
struct LabellingContext {
  ImagesByContent& images;
  float mask_threshold = 0;
  int64_t max_image_bytes = 0;  // --max-upload-mb: the most an image may weigh, however it arrives
  int threads = 0;              // --threads, for serve_handler's guarded
  std::string model_version;    // what the protocols report as the model
};

}  // namespace sam2rt::cli
