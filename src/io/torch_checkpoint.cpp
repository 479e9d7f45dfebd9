#include "io/torch_checkpoint.h"

#include <cstring>
#include <set>
#include <span>
#include <vector>

#include "core/error.h"
#include "io/half.h"
#include "io/pickle_reader.h"
#include "io/printable_text.h"
#include "io/zip_archive.h"

namespace sam2rt {

namespace {

// 16 Gi elements (64 GiB as float32): far above any SAM 2.1 tensor, and it
// keeps every element count below overflow.
constexpr int64_t kMaxTensorElements = int64_t{1} << 34;
// A tensor with zero strides (an expanded view) can claim many more elements
// than its storage holds; copying it out is allowed up to 1 GiB of float32, so
// a hostile file cannot make the loader allocate without bound.
constexpr int64_t kMaxExpandedElements = int64_t{1} << 28;

class CheckpointReader {
 public:
  explicit CheckpointReader(std::shared_ptr<MappedFile> file)
      : file_(std::move(file)),
        origin_("checkpoint '" + file_->path() + "'"),
        zip_(std::span<const uint8_t>(file_->data(), file_->size()), origin_) {}

  WeightMap read() {
    folder_ = record_folder();
    check_byte_order();
    const ZipEntry& pickle = zip_.at(folder_ + "data.pkl");
    zip_.verify_crc(pickle);
    graph_ = read_torch_pickle(zip_.data(pickle), origin_);

    WeightMap weights;
    const PickleObject& state = state_dict();
    for (size_t i = 0; i + 1 < state.items.size(); i += 2) {
      const PickleObject& key = graph_[state.items[i]];
      const PickleObject& value = graph_[state.items[i + 1]];
      if (key.kind != PickleKind::kString) fail("state dict has a key that is not a string");
      if (value.kind != PickleKind::kTensor) fail("state dict entry '" + printable(key.text) + "' is not a tensor");
      weights.insert(key.text, materialize(key.text, value));
    }
    if (weights.size() == 0) fail("state dict holds no tensors");
    return weights;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { throw Error(origin_ + ": " + problem); }

  // torch.save puts every record under one top folder whose name varies with
  // the torch version ("archive/", or the file's stem); data.pkl marks it.
  std::string record_folder() const {
    std::string folder;
    for (const ZipEntry& entry : zip_.entries()) {
      const size_t slash = entry.name.find('/');
      if (slash == std::string::npos || entry.name.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
      if (!folder.empty()) fail("zip archive holds several data.pkl records; not a torch.save checkpoint");
      folder = entry.name.substr(0, slash + 1);
    }
    if (folder.empty()) fail("zip archive has no '<folder>/data.pkl' record; not a torch.save checkpoint");
    return folder;
  }

  void check_byte_order() const {
    const ZipEntry* entry = zip_.find(folder_ + "byteorder");
    if (!entry) return;  // written since torch 2.0; older files are little-endian
    const auto bytes = zip_.data(*entry);
    const std::string order(bytes.begin(), bytes.end());
    if (order != "little") fail("was saved on a big-endian machine; re-save it on a little-endian one");
  }

  // Official checkpoints are {"model": state_dict}; a bare state dict is accepted too.
  const PickleObject& state_dict() const {
    const PickleObject& top = graph_[graph_.root];
    if (top.kind != PickleKind::kDict) fail("pickle does not hold a dict; expected {\"model\": state_dict}");
    const PickleObject* model = nullptr;
    for (size_t i = 0; i + 1 < top.items.size(); i += 2) {
      const PickleObject& key = graph_[top.items[i]];
      if (key.kind == PickleKind::kString && key.text == "model") model = &graph_[top.items[i + 1]];
    }
    if (!model || model->kind == PickleKind::kTensor) return top;  // a bare state dict may have a tensor "model"
    if (model->kind != PickleKind::kDict) fail("entry \"model\" is not a state dict");
    return *model;
  }

  Tensor materialize(const std::string& key, const PickleObject& tensor) {
    const std::string named = "tensor '" + printable(key) + "'";
    const PickleObject& storage = graph_[tensor.items[0]];
    const size_t element_size = storage_element_size(storage.dtype);
    const std::string record = folder_ + "data/" + storage.text;
    const ZipEntry* entry = zip_.find(record);
    const std::string quoted_record = "storage record '" + printable(record) + "'";
    if (!entry) fail(named + " refers to " + quoted_record + ", which the archive lacks");
    // A flipped bit in tensor data would otherwise go unnoticed; zlib's CRC
    // costs about 0.15 s per gigabyte, on pages the model reads anyway.
    if (verified_records_.insert(entry).second) zip_.verify_crc(*entry);
    if (entry->size % element_size != 0) {
      fail(quoted_record + " has " + std::to_string(entry->size) + " bytes, not a multiple of the " +
           std::to_string(element_size) + "-byte " + storage_dtype_name(storage.dtype) + " element");
    }
    const uint64_t storage_numel = static_cast<uint64_t>(storage.integer);
    if (storage_numel > entry->size / element_size) {
      fail(quoted_record + " has " + std::to_string(entry->size) + " bytes but declares " +
           std::to_string(storage_numel) + " elements of " + std::to_string(element_size) + " bytes");
    }

    const Shape& sizes = tensor.sizes;
    int64_t numel = 1;
    for (int64_t d : sizes) {
      if (d > kMaxTensorElements || (d != 0 && numel > kMaxTensorElements / d)) {
        fail(named + " has an implausibly large shape " + shape_to_string(sizes));
      }
      numel *= d;
    }
    if (numel == 0) return Tensor(sizes);
    if (numel > kMaxExpandedElements && static_cast<uint64_t>(numel) > storage_numel) {
      fail(named + " repeats its storage of " + std::to_string(storage_numel) + " elements into shape " +
           shape_to_string(sizes) + ", more than the loader copies out");
    }

    // The last element addressed must lie within the storage.
    const uint64_t offset = static_cast<uint64_t>(tensor.integer);
    const std::string out_of_range = named + " with offset " + std::to_string(offset) + ", shape " +
                                     shape_to_string(sizes) + " and strides " + shape_to_string(tensor.strides) +
                                     " reaches beyond its storage of " + std::to_string(storage_numel) + " elements";
    if (offset >= storage_numel) fail(out_of_range);
    uint64_t reach = offset;
    for (size_t d = 0; d < sizes.size(); ++d) {
      const uint64_t steps = static_cast<uint64_t>(sizes[d]) - 1;
      const uint64_t stride = static_cast<uint64_t>(tensor.strides[d]);
      if (steps != 0 && stride > (storage_numel - 1 - reach) / steps) fail(out_of_range);
      reach += steps * stride;
    }

    const uint8_t* base = zip_.data(*entry).data();
    const uint8_t* first = base + offset * element_size;
    if (is_contiguous(tensor)) {
      if (storage.dtype == StorageDtype::kFloat32) {
        if (reinterpret_cast<uintptr_t>(first) % alignof(float) == 0) {
          // The mapping is private and writable, so handing out float* is safe.
          return Tensor::view(sizes, reinterpret_cast<float*>(const_cast<uint8_t*>(first)), file_);
        }
        Tensor copy(sizes);
        std::memcpy(copy.data(), first, static_cast<size_t>(numel) * sizeof(float));
        return copy;
      }
      Tensor wide(sizes);
      widen(storage.dtype, first, numel, wide.data());
      return wide;
    }
    return gather(tensor, storage.dtype, base);
  }

  // Row-major up to dimensions of size 1, whose strides torch leaves arbitrary.
  static bool is_contiguous(const PickleObject& tensor) {
    int64_t expected = 1;
    for (size_t d = tensor.sizes.size(); d-- > 0;) {
      if (tensor.sizes[d] == 1) continue;
      if (tensor.strides[d] != expected) return false;
      expected *= tensor.sizes[d];
    }
    return true;
  }

  static float element(StorageDtype dtype, const uint8_t* at) {
    if (dtype == StorageDtype::kFloat32) {
      float value;
      std::memcpy(&value, at, sizeof value);
      return value;
    }
    uint16_t bits;
    std::memcpy(&bits, at, sizeof bits);
    return dtype == StorageDtype::kFloat16 ? f16_to_float(bits) : bf16_to_float(bits);
  }

  static void widen(StorageDtype dtype, const uint8_t* from, int64_t count, float* to) {
    const size_t element_size = storage_element_size(dtype);
    for (int64_t i = 0; i < count; ++i) to[i] = element(dtype, from + static_cast<size_t>(i) * element_size);
  }

  // Copies a strided view element by element into a row-major tensor; torch
  // only saves such views when a state dict holds transposed or sliced tensors.
  static Tensor gather(const PickleObject& tensor, StorageDtype dtype, const uint8_t* storage) {
    const size_t element_size = storage_element_size(dtype);
    const Shape& sizes = tensor.sizes;
    const size_t rank = sizes.size();
    Tensor out(sizes);
    std::vector<int64_t> index(rank, 0);
    int64_t source = tensor.integer;
    for (int64_t i = 0; i < out.numel(); ++i) {
      out[i] = element(dtype, storage + static_cast<size_t>(source) * element_size);
      // Advance the multi-index like an odometer, moving `source` along.
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < sizes[d]) {
          source += tensor.strides[d];
          break;
        }
        source -= (sizes[d] - 1) * tensor.strides[d];
        index[d] = 0;
      }
    }
    return out;
  }

  std::shared_ptr<MappedFile> file_;
  std::string origin_;
  ZipArchive zip_;
  std::string folder_;
  PickleGraph graph_;
  std::set<const ZipEntry*> verified_records_;  // storages may be shared by several tensors
};

}  // namespace

WeightMap load_torch_checkpoint(std::shared_ptr<MappedFile> file) {
  if (file->size() == 0) throw Error("checkpoint '" + file->path() + "': file is empty");
  return CheckpointReader(std::move(file)).read();
}

WeightMap load_torch_checkpoint(const std::string& path) { return load_torch_checkpoint(MappedFile::open(path)); }

}  // namespace sam2rt
