#include "track_prompts.h"

#include <algorithm>
#include <charconv>

#include "api/prompt_text.h"
#include "core/error.h"

namespace sam2rt::cli {

namespace {

struct FrameAndValue {
  int64_t frame = 0;
  std::string value;
};

// "F:rest" -> F and rest; F a non-negative decimal integer.
FrameAndValue split_frame(const PromptArgument& argument) {
  const std::string& text = argument.text;
  const size_t colon = text.find(':');
  int64_t frame = -1;
  const char* end = text.data() + (colon == std::string::npos ? 0 : colon);
  const auto [parsed_end, error] = std::from_chars(text.data(), end, frame);
  if (colon == std::string::npos || colon == 0 || error != std::errc() || parsed_end != end || frame < 0) {
    throw Error(argument.flag + " '" + text + "': expected FRAME:" +
                (argument.flag == "--mask" ? "FILE.png" : argument.flag == "--box" ? "X0,Y0,X1,Y1" : "X,Y[,LABEL]") +
                " with FRAME a frame index (0 = the first frame)");
  }
  return {frame, text.substr(colon + 1)};
}

}  // namespace

std::vector<TrackPrompt> group_track_prompts(const std::vector<PromptArgument>& arguments) {
  std::vector<TrackPrompt> prompts;
  for (const PromptArgument& argument : arguments) {
    const FrameAndValue parsed = split_frame(argument);
    auto it = std::find_if(prompts.begin(), prompts.end(), [&](const TrackPrompt& p) {
      return p.obj_id == argument.obj_id && p.frame == parsed.frame;
    });
    if (it == prompts.end()) {
      TrackPrompt& added = prompts.emplace_back();
      added.obj_id = argument.obj_id;
      added.frame = parsed.frame;
      added.origin = argument.flag + " '" + argument.text + "'";
      it = prompts.end() - 1;
    }
    TrackPrompt& prompt = *it;
    try {
      if (argument.flag == "--point") {
        prompt.points.push_back(parse_point(parsed.value));
      } else if (argument.flag == "--box") {
        if (prompt.box) throw Error("a second box for the same object and frame; one box per object and frame");
        prompt.box = parse_box(parsed.value);
      } else {
        if (!prompt.mask_path.empty()) throw Error("a second mask for the same object and frame");
        if (parsed.value.empty()) throw Error("no file name after the frame index");
        prompt.mask_path = parsed.value;
      }
    } catch (const Error& e) {
      throw Error(argument.flag + " '" + argument.text + "': " + e.what());
    }
    if (!prompt.mask_path.empty() && (prompt.box || !prompt.points.empty())) {
      throw Error(argument.flag + " '" + argument.text + "': object " + std::to_string(prompt.obj_id) +
                  " on frame " + std::to_string(prompt.frame) +
                  " has both a mask and points or a box; prompt a frame with one or the other");
    }
  }
  return prompts;
}

}  // namespace sam2rt::cli
