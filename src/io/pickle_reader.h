#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sam2rt {

// A restricted unpickler for the data.pkl record of a torch.save state dict.
// It builds a passive object graph and never executes anything: the only
// globals it accepts are collections.OrderedDict, torch._utils._rebuild_tensor_v2
// and the float storage types; every other global, and every opcode a state
// dict does not need, is refused with an Error naming it.

enum class StorageDtype { kFloat32, kFloat16, kBFloat16 };

size_t storage_element_size(StorageDtype dtype);
const char* storage_dtype_name(StorageDtype dtype);  // e.g. "FloatStorage"

enum class PickleKind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };

enum class PickleGlobal { kOrderedDict, kRebuildTensorV2, kStorageType };

using PickleRef = size_t;  // index into PickleGraph::objects

struct PickleObject {
  PickleKind kind = PickleKind::kNone;
  int64_t integer = 0;          // Int; Bool (0/1); Storage: numel; Tensor: storage offset
  double real = 0.0;            // Float
  std::string text;             // String; Global: "module.name"; Storage: record key
  std::vector<PickleRef> items;  // Tuple/List: elements; Dict: key, value, key, value, ...
                                 // (a later equal key overrides, as in Python); Tensor: {storage}
  PickleGlobal global{};        // Global
  StorageDtype dtype{};         // Storage, and Globals naming a storage type
  Shape sizes;                  // Tensor
  std::vector<int64_t> strides;  // Tensor, in elements
};

// Objects shared through the pickle memo are shared here too (same ref).
struct PickleGraph {
  std::vector<PickleObject> objects;
  PickleRef root = 0;
  const PickleObject& operator[](PickleRef ref) const { return objects[ref]; }
};

// `origin` prefixes every error, e.g. "checkpoint 'sam.pt'". Tensors are
// checked for structure only (types, ranks, non-negative sizes); whether they
// fit their storage is for the caller, who knows the storage bytes.
PickleGraph read_torch_pickle(std::span<const uint8_t> bytes, const std::string& origin);

}  // namespace sam2rt
