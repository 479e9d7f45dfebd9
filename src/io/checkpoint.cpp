#include "io/checkpoint.h"

#include <cstring>

#include "core/error.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"

namespace sam2rt {

namespace {

constexpr char kAcceptedFormats[] =
    "accepted are PyTorch checkpoints written by torch.save (zip, e.g. sam2.1_hiera_tiny.pt) and .safetensors files";

bool starts_with(const MappedFile& file, const void* prefix, size_t length) {
  return file.size() >= length && std::memcmp(file.data(), prefix, length) == 0;
}

// torch.save before PyTorch 1.6 wrote a bare pickle stream starting with this magic number.
constexpr uint8_t kLegacyTorchMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};

}  // namespace

WeightMap load_checkpoint(const std::string& path) {
  auto file = MappedFile::open(path);
  if (file->size() == 0) throw Error("weights file '" + path + "' is empty; " + kAcceptedFormats);
  if (starts_with(*file, "PK\x03\x04", 4)) return load_torch_checkpoint(std::move(file));
  // A safetensors file opens with the 8-byte length of its JSON header.
  if (file->size() > 8 && file->data()[8] == '{') {
    WeightMap weights;
    for (auto& [key, tensor] : read_safetensors(std::move(file)).tensors) weights.insert(key, std::move(tensor));
    return weights;
  }
  if (starts_with(*file, kLegacyTorchMagic, sizeof kLegacyTorchMagic)) {
    throw Error("weights file '" + path +
                "' uses the legacy torch.save format of PyTorch < 1.6; re-save it with a current torch.save");
  }
  throw Error("weights file '" + path + "' is neither a torch.save checkpoint nor a safetensors file; " +
              kAcceptedFormats);
}

}  // namespace sam2rt
