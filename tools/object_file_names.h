#pragma once

#include <cstddef>
#include <string>

namespace sam2rt::cli {

// Where object `index` of a run with several objects writes a per-object output
// given as `path`: the index joins the file name before its extension
// ("masks/cat.png", 2 -> "masks/cat_2.png"; "logits" -> "logits_2").
std::string object_file_name(const std::string& path, size_t index);

}  // namespace sam2rt::cli
