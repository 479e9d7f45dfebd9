// The reference of the install test: segments like segment_point.c, but through the
// C++ API of the build tree, and requires each RESULT file (written by segment_point
// through the installed C library) to hold the same bytes.
// usage: compare_with_cpp_api CHECKPOINT CONFIG_YAML IMAGE RESULT...
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "api/predictor.h"

namespace {

template <typename T>
void append(std::vector<char>& bytes, const T* values, size_t count) {
  const char* begin = reinterpret_cast<const char*>(values);
  bytes.insert(bytes.end(), begin, begin + count * sizeof(T));
}

// segment_point.c's layout: num_masks, width, height (int32), 3 IoUs, the object score, the logits (float32).
std::vector<char> serialize(const sam2rt::MaskPrediction& result) {
  std::vector<char> bytes;
  const int32_t sizes[3] = {static_cast<int32_t>(result.masks.dim(0)), static_cast<int32_t>(result.masks.dim(2)),
                            static_cast<int32_t>(result.masks.dim(1))};
  append(bytes, sizes, 3);
  float iou[3] = {};
  std::memcpy(iou, result.iou_predictions.data(), std::min<size_t>(3, result.iou_predictions.size()) * sizeof(float));
  append(bytes, iou, 3);
  append(bytes, &result.object_score_logit, 1);
  append(bytes, result.masks.data(), static_cast<size_t>(result.masks.numel()));
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: compare_with_cpp_api CHECKPOINT CONFIG_YAML IMAGE RESULT...\n");
    return 2;
  }
  try {
    sam2rt::ModelSource source;
    source.checkpoint_path = argv[1];
    source.config_path = argv[2];
    sam2rt::Predictor predictor(sam2rt::Sam2Model::load(source));
    predictor.set_image(sam2rt::decode_image_file(argv[3]));
    sam2rt::Prompt prompt;
    prompt.points.push_back({110.0f, 41.0f, 1});
    const std::vector<char> expected = serialize(predictor.predict(prompt, true));
    int failures = 0;
    for (int i = 4; i < argc; ++i) {
      std::ifstream in(argv[i], std::ios::binary);
      const std::vector<char> actual{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (actual == expected) {
        std::printf("compare_with_cpp_api: %s matches the C++ API (%zu bytes)\n", argv[i], expected.size());
        continue;
      }
      ++failures;
      size_t first = 0;
      while (first < std::min(actual.size(), expected.size()) && actual[first] == expected[first]) ++first;
      std::fprintf(stderr, "compare_with_cpp_api: %s differs from the C++ API: %zu bytes instead of %zu, first difference at byte %zu\n",
                   argv[i], actual.size(), expected.size(), first);
    }
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compare_with_cpp_api: %s\n", e.what());
    return 1;
  }
}
