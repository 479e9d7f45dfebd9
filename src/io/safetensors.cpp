#include "io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/half.h"
#include "io/half_narrowing.h"
#include "io/mapped_file.h"
#include "io/printable_text.h"
#include "io/safetensors_narrow.h"

namespace sam2rt {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own limit
constexpr int64_t kMaxRank = 8;
constexpr uint64_t kMaxElements = uint64_t{1} << 40;

struct Entry {
  std::string name;
  std::string dtype;
  Shape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

size_t dtype_size(const std::string& dtype, const std::string& origin, const std::string& name) {
  if (dtype == "F32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  throw Error(origin + ": tensor '" + printable(name) + "' has dtype " + printable(dtype) +
              "; only F32, F16 and BF16 are supported");
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path) { return read_safetensors(MappedFile::open(path)); }

SafetensorsFile read_safetensors(std::shared_ptr<MappedFile> file) {
  const std::string origin = "safetensors '" + file->path() + "'";
  if (file->size() < 8) throw Error(origin + ": file is too short to hold a header");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file->data(), 8);
  if (header_len > kMaxHeaderBytes || header_len > file->size() - 8) {
    throw Error(origin + ": header length " + std::to_string(header_len) + " exceeds the file size " +
                std::to_string(file->size()) + " (truncated or not a safetensors file)");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file->data() + 8, file->data() + 8 + header_len);
  } catch (const nlohmann::json::exception&) {
    throw Error(origin + ": header is not valid JSON");
  }
  if (!header.is_object()) throw Error(origin + ": header is not a JSON object");

  SafetensorsFile result;
  std::vector<Entry> entries;
  const uint64_t data_size = file->size() - 8 - header_len;
  try {
    for (auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object()) throw Error(origin + ": __metadata__ is not an object");
        for (auto& [k, v] : value.items()) {
          if (!v.is_string()) throw Error(origin + ": metadata value '" + printable(k) + "' is not a string");
          result.metadata[k] = v.get<std::string>();
        }
        continue;
      }
      if (!value.is_object()) throw Error(origin + ": entry '" + printable(name) + "' is not an object");
      Entry e;
      e.name = name;
      const std::string tensor = origin + ": tensor '" + printable(name) + "'";
      e.dtype = value.at("dtype").get<std::string>();
      const auto& shape = value.at("shape");
      const auto& offsets = value.at("data_offsets");
      if (!shape.is_array() || static_cast<int64_t>(shape.size()) > kMaxRank) {
        throw Error(tensor + " has an invalid shape");
      }
      if (!offsets.is_array() || offsets.size() != 2) {
        throw Error(tensor + " needs data_offsets [begin, end]");
      }
      for (const auto& d : shape) {
        if (!d.is_number_unsigned()) throw Error(tensor + " has a negative or non-integer dimension");
        e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(d.get<uint64_t>(), kMaxElements + 1)));
      }
      // An empty tensor ([0, 4]) needs no bytes; its other dimensions are still
      // bounded, so that no element count anywhere can overflow.
      const bool empty = std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end();
      const uint64_t bound = empty ? kMaxElements : data_size;
      uint64_t elements = 1;  // of the non-zero dimensions
      for (int64_t dim : e.shape) {
        if (dim == 0) continue;
        if (elements > bound / static_cast<uint64_t>(dim)) {
          throw Error(tensor + (empty ? " has an implausibly large shape" : " is larger than the file"));
        }
        elements *= static_cast<uint64_t>(dim);
      }
      if (empty) elements = 0;
      if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
        throw Error(tensor + " has non-integer data_offsets");
      }
      e.begin = offsets[0].get<uint64_t>();
      e.end = offsets[1].get<uint64_t>();
      const size_t elem = dtype_size(e.dtype, origin, name);
      if (e.begin > e.end || e.end > data_size) {
        throw Error(tensor + " data_offsets [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "] lie outside the data section (" + std::to_string(data_size) +
                    " bytes)");
      }
      if (e.end - e.begin != elements * elem) {
        throw Error(tensor + " has " + std::to_string(e.end - e.begin) +
                    " bytes but its shape " + shape_to_string(e.shape) + " and dtype " + e.dtype + " need " +
                    std::to_string(elements * elem));
      }
      entries.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception&) {
    throw Error(origin + ": header entry is missing dtype, shape or data_offsets, or has the wrong type");
  }

  // Empty tensors occupy no bytes, so they may share an offset with anything.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      throw Error(origin + ": tensors '" + printable(by_offset[i - 1]->name) + "' and '" +
                  printable(by_offset[i]->name) + "' overlap");
    }
  }

  uint8_t* data = file->data() + 8 + header_len;
  for (const Entry& e : entries) {
    uint8_t* bytes = data + e.begin;
    if (e.dtype == "F32" && reinterpret_cast<uintptr_t>(bytes) % alignof(float) == 0) {
      result.tensors[e.name] = Tensor::view(e.shape, reinterpret_cast<float*>(bytes), file);
      continue;
    }
    Tensor t(e.shape);
    if (e.dtype == "F32") {
      std::memcpy(t.data(), bytes, static_cast<size_t>(t.numel()) * 4);
    } else {
      for (int64_t i = 0; i < t.numel(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        t[i] = e.dtype == "F16" ? f16_to_float(bits) : bf16_to_float(bits);
      }
    }
    result.tensors[e.name] = std::move(t);
  }
  return result;
}

namespace {

void write_stored(AtomicFile& out, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata,
                  StoredDtype dtype) {
  const char* dtype_name = dtype == StoredDtype::f32 ? "F32" : dtype == StoredDtype::f16 ? "F16" : "BF16";
  const uint64_t element_bytes = dtype == StoredDtype::f32 ? 4 : 2;
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * element_bytes;
    header[name] = {{"dtype", dtype_name}, {"shape", tensor.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  const uint64_t header_len = text.size();

  out.write(&header_len, 8);
  out.write(text.data(), text.size());
  std::vector<uint16_t> narrowed;
  for (const auto& entry : tensors) {
    const Tensor& t = entry.second;
    if (dtype == StoredDtype::f32) {
      out.write(t.data(), static_cast<size_t>(t.numel()) * 4);
      continue;
    }
    narrowed.resize(static_cast<size_t>(t.numel()));
    std::transform(t.begin(), t.end(), narrowed.begin(), dtype == StoredDtype::f16 ? float_to_f16 : float_to_bf16);
    out.write(narrowed.data(), narrowed.size() * 2);
  }
}

}  // namespace

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_as(path, tensors, metadata, StoredDtype::f32);
}

void write_safetensors(AtomicFile& out, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_stored(out, tensors, metadata, StoredDtype::f32);
}

void write_safetensors_as(const std::string& path, const NamedTensors& tensors,
                          const std::map<std::string, std::string>& metadata, StoredDtype dtype) {
  AtomicFile out(path);
  write_stored(out, tensors, metadata, dtype);
  out.commit();
}

}  // namespace sam2rt
