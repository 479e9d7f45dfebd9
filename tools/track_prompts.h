#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/prompt.h"

namespace sam2rt::cli {

// What `track` asks of one object on one frame: the points and box go into one
// add_new_points_or_box call, a mask (a PNG file) into add_new_mask.
struct TrackPrompt {
  int64_t obj_id = 1;
  int64_t frame = 0;
  std::vector<PointPrompt> points;
  std::optional<std::array<float, 4>> box;
  std::string mask_path;
  std::string origin;  // the first argument of this object and frame, for errors ("--point '0:125,85'")
};

// One prompt option as it appeared on the command line: its flag (--point,
// --box or --mask), its text ("F:X,Y[,L]", "F:X0,Y0,X1,Y1", "F:file.png") and
// the object id the --obj before it chose.
struct PromptArgument {
  std::string flag;
  std::string text;
  int64_t obj_id = 1;
};

// The prompts grouped by object and frame, in the order each (object, frame)
// first appears. Error quoting the argument for a malformed one, and for a
// point or box given together with a mask on the same object and frame (the
// official predictor takes one or the other per call).
std::vector<TrackPrompt> group_track_prompts(const std::vector<PromptArgument>& arguments);

}  // namespace sam2rt::cli
