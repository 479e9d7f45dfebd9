#pragma once

// What each fuzz target does with one input, shared with the regression test
// that replays every input the fuzzers ever crashed on (tests/regressions/).
// Each function throws sam2rt::Error when it refuses the input, the expected
// outcome for most; std::logic_error means a broken promise (a bug).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "api/overlay.h"
#include "api/prompt_text.h"
#include "core/error.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "io/zip_archive.h"
#include "model/config.h"
#include "model/preprocess.h"
#include "model/prompt.h"
#include "model/weight_manifest.h"

namespace sam2rt::fuzz {

// Reads every element, so a view that reaches past its buffer shows up under
// the address sanitizer; the sum keeps the reads from being optimised away.
template <typename Floats>
void touch_all(const Floats& values) {
  volatile float sink = 0.0f;
  for (float v : values) sink = sink + v;
}

// Writes the true CRC-32 of every record into its central directory entry, so
// that mutated pickles and tensor data get past the CRC checks to the parsers
// behind them. Leaves archives the zip reader refuses as they are.
inline void fix_zip_crcs(std::vector<uint8_t>& bytes) {
  try {
    const ZipArchive zip(bytes, "fuzz.pt");
    for (size_t pos = 0; pos + 46 <= bytes.size(); ++pos) {
      if (bytes[pos] != 'P' || bytes[pos + 1] != 'K' || bytes[pos + 2] != 1 || bytes[pos + 3] != 2) continue;
      const size_t name_length = bytes[pos + 28] | (bytes[pos + 29] << 8);
      if (pos + 46 + name_length > bytes.size()) continue;
      const std::string_view name(reinterpret_cast<const char*>(&bytes[pos + 46]), name_length);
      if (const ZipEntry* entry = zip.find(name)) {
        const uint32_t crc = zip_crc32(zip.data(*entry));
        for (int i = 0; i < 4; ++i) bytes[pos + 16 + i] = static_cast<uint8_t>(crc >> (8 * i));
      }
    }
  } catch (const Error&) {
    // Not a zip the reader accepts: it will say so itself.
  }
}

// The torch.save reader: zip directory, restricted unpickler, tensor views.
inline void load_torch_checkpoint_bytes(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  fix_zip_crcs(bytes);
  const WeightMap weights = load_torch_checkpoint(MappedFile::from_bytes(std::move(bytes), "fuzz.pt"));
  for (const auto& entry : weights.all()) touch_all(entry.second);
}

// The safetensors reader: header length, JSON, offsets, dtypes.
inline void read_safetensors_bytes(const uint8_t* data, size_t size) {
  const SafetensorsFile file =
      read_safetensors(MappedFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.safetensors"));
  for (const auto& entry : file.tensors) touch_all(entry.second);
}

// The YAML config reader and its validation; an accepted config must also
// give a weight manifest.
inline void parse_config_yaml_bytes(const uint8_t* data, size_t size) {
  const ModelConfig config = parse_config_yaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  image_path_weights(config);
}

// PNG/JPEG decoding (with EXIF orientation) and the model's preprocessing.
// The pixel limit is small enough that the fuzzer spends its time in the
// decoders, large enough for every code path (interlacing, progressive scans).
inline void decode_image_bytes_and_preprocess(const uint8_t* data, size_t size) {
  constexpr int64_t kMaxFuzzPixels = 1 << 20;
  constexpr int kModelInputSize = 64;
  const RgbImage image = decode_image_bytes(data, size, "fuzz.img", kMaxFuzzPixels);
  if (image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    throw std::logic_error("decoded image has the wrong number of bytes");
  }
  touch_all(preprocess_image(image, kModelInputSize));
}

// The CLI prompt syntax, validation against an image size, and the overlay
// drawing of accepted prompts. Input: two bytes of image width and two of
// height (each 1..512), then lines "p<--point text>", "b<--box text>" or
// "m<D0>,<D1>,<D2>,<value>" (a mask input of that shape filled with that value).
inline void validate_prompt_text(const uint8_t* data, size_t size) {
  constexpr int kMaxSide = 512;
  constexpr double kMaxMaskDim = 300;
  if (size < 4) return;
  const int width = 1 + (data[0] | (data[1] << 8)) % kMaxSide;
  const int height = 1 + (data[2] | (data[3] << 8)) % kMaxSide;
  static const ModelConfig config = preset_config("tiny");

  Prompt prompt;
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data) + 4, size - 4));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const std::string rest = line.substr(1);
    if (line[0] == 'p') {
      if (prompt.points.size() <= static_cast<size_t>(kMaxPoints)) prompt.points.push_back(parse_point(rest));
    } else if (line[0] == 'b') {
      prompt.box = parse_box(rest);
    } else if (line[0] == 'm') {
      std::istringstream fields(rest);
      std::string field;
      Shape shape;
      float value = 0.0f;
      for (int i = 0; i < 4 && std::getline(fields, field, ','); ++i) {
        const double number = std::strtod(field.c_str(), nullptr);
        if (i == 3) {
          value = static_cast<float>(number);
        } else {
          // At most 2 x 300 x 300 values: [1, 256, 256] and its near misses, quickly.
          const double limit = i == 0 ? 3 : kMaxMaskDim;
          shape.push_back(std::isfinite(number) ? static_cast<int64_t>(std::fabs(std::fmod(number, limit))) : 1);
        }
      }
      prompt.mask_input = Tensor::filled(shape, value);
    }
  }
  validate_prompt(prompt, width, height, config);

  // validate_prompt's promise: what it accepts is finite and inside the image.
  auto inside = [&](float x, float y) {
    return std::isfinite(x) && std::isfinite(y) && x >= 0 && y >= 0 && x <= width && y <= height;
  };
  if (prompt.points.size() > static_cast<size_t>(kMaxPoints)) throw std::logic_error("too many points accepted");
  for (const PointPrompt& p : prompt.points) {
    if (!inside(p.x, p.y) || (p.label != 0 && p.label != 1)) throw std::logic_error("bad point accepted");
  }
  if (prompt.box) {
    const auto& b = *prompt.box;
    if (!inside(b[0], b[1]) || !inside(b[2], b[3]) || b[2] < b[0] || b[3] < b[1]) {
      throw std::logic_error("bad box accepted");
    }
  }
  const RgbImage photo{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 128)};
  render_overlay(photo, std::vector<uint8_t>(static_cast<size_t>(width) * height, 0), prompt);
}

}  // namespace sam2rt::fuzz
