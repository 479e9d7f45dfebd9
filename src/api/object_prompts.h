#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/prompt.h"

namespace sam2rt {

// One object of a `segment --prompts FILE.json` run: what SAM2ImagePredictor.predict
// takes for it (points with labels and an optional box; the mask input is named by
// file and read by the caller, who knows the model's low-res size).
struct ObjectPrompt {
  std::string name;             // optional label, carried into the outputs
  Prompt prompt;                // points and box; mask_input stays empty here
  std::string mask_input_path;  // as written in the file ("" = none)
};

// Each output file of an object stays open until the run commits them all, so a
// run keeps several descriptors per object: the count is bounded well below the
// usual limit of 1024 open files.
inline constexpr size_t kMaxObjects = 256;

// Parses the prompts file:
//   [{"name": "cat", "points": [[x, y], [x, y, label], ...], "box": [x0, y0, x1, y1],
//     "mask_input": "logits.safetensors"}, ...]
// Every field is optional but each object needs at least one of points, box and
// mask_input; a label is 1 (object, the default) or 0 (background). Unknown
// fields, wrong types, non-finite numbers, an empty list or more than kMaxObjects
// objects throw Error with one line that starts with `origin` and names the object
// index and field ("--prompts 'p.json': object 1, \"box\": ..."). Coordinates are
// checked against the image later (validate_prompt).
std::vector<ObjectPrompt> parse_object_prompts(std::string_view text, const std::string& origin);

}  // namespace sam2rt
