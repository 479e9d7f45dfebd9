#include "video_request.h"

#include <charconv>
#include <limits>
#include <string>

#include "api/json_body.h"
#include "core/error.h"

namespace sam2rt::cli {

namespace {

using nlohmann::json;

constexpr int64_t kMaxObjId = std::numeric_limits<int32_t>::max();

std::string frames_text(const VideoBounds& video) {
  return "the video's " + std::to_string(video.frames) + " frames (0.." + std::to_string(video.frames - 1) + ")";
}

int64_t check_frame(int64_t frame, const VideoBounds& video, const std::string& what) {
  if (frame < 0 || frame >= video.frames) {
    throw Error(what + " " + std::to_string(frame) + " is outside " + frames_text(video));
  }
  return frame;
}

int64_t whole_number(const json& value, const std::string& what) {
  if (!value.is_number_integer()) throw Error(what + " must be a whole number, got " + value.dump());
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(kMaxObjId)) {
    throw Error(what + " " + value.dump() + " is too large");
  }
  return value.get<int64_t>();
}

int64_t required_frame(json& request, const VideoBounds& video) {
  const auto it = request.find("frame");
  if (it == request.end() || it->is_null()) throw Error("\"frame\" is missing: the frame index the prompt is on");
  const int64_t frame = check_frame(whole_number(*it, "frame"), video, "frame");
  request.erase(it);
  return frame;
}

int64_t obj_id_value(const json& value) {
  const int64_t id = whole_number(value, "obj_id");
  if (id < 0 || id > kMaxObjId) {
    throw Error("obj_id " + value.dump() + " must be a whole number from 0 to " + std::to_string(kMaxObjId));
  }
  return id;
}

int64_t required_obj_id(json& request) {
  const auto it = request.find("obj_id");
  if (it == request.end() || it->is_null()) throw Error("\"obj_id\" is missing: the object's id (a whole number)");
  const int64_t id = obj_id_value(*it);
  request.erase(it);
  return id;
}

int64_t whole_text(std::string_view text, const std::string& what) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw Error(what + " '" + std::string(text.substr(0, 32)) + "' is not a whole number");
  }
  return value;
}

}  // namespace

VideoPromptRequest parse_video_prompt_request(std::string_view body, const VideoBounds& video, int max_points) {
  json request = parse_json_object(body);
  VideoPromptRequest result;
  result.frame = required_frame(request, video);
  result.obj_id = required_obj_id(request);
  for (const char* image_only : {"multimask", "mask_size"}) {
    if (request.contains(image_only)) {
      throw Error(std::string("\"") + image_only + "\" is not a field of video prompts (expected frame, obj_id, "
                  "points, box, format)");
    }
  }
  // The rest is an image segment request's prompt, checked against the frame's size.
  const SegmentRequest prompt =
      parse_segment_request(request.dump(), video.width, video.height, SegmentLimits{max_points});
  result.prompt = prompt.prompt;
  result.format = prompt.format;
  return result;
}

ObjectOnFrame parse_object_on_frame(std::string_view body, const VideoBounds& video) {
  json request = parse_json_object(body);
  ObjectOnFrame result;
  result.frame = required_frame(request, video);
  result.obj_id = required_obj_id(request);
  if (!request.empty()) {
    throw Error("unknown field \"" + request.begin().key().substr(0, 64) + "\" (expected frame, obj_id)");
  }
  return result;
}

PropagateRequest parse_propagate_request(std::string_view body, const VideoBounds& video) {
  PropagateRequest result;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return result;
  const json request = parse_json_object(body);
  for (const auto& [key, value] : request.items()) {
    if (value.is_null()) continue;
    if (key == "reverse") {
      if (!value.is_boolean()) throw Error("reverse must be true or false, got " + value.dump());
      result.reverse = value.get<bool>();
    } else if (key == "start_frame") {
      result.start_frame = check_frame(whole_number(value, "start_frame"), video, "start_frame");
    } else if (key == "max_frames") {
      const int64_t frames = whole_number(value, "max_frames");
      if (frames < 0) throw Error("max_frames must not be negative, got " + value.dump());
      result.max_frames = frames;
    } else {
      throw Error("unknown field \"" + key.substr(0, 64) + "\" (expected reverse, start_frame, max_frames)");
    }
  }
  return result;
}

MaskFormat parse_mask_format(std::string_view text) {
  if (text == "png") return MaskFormat::png;
  if (text == "rle") return MaskFormat::rle;
  if (text == "coco_rle") return MaskFormat::coco_rle;
  throw Error("format must be png, rle or coco_rle, got '" + std::string(text.substr(0, 32)) + "'");
}

int64_t parse_obj_id_text(std::string_view text) { return obj_id_value(json(whole_text(text, "object id"))); }

int64_t parse_frame_text(std::string_view text, const VideoBounds& video) {
  return check_frame(whole_text(text, "frame"), video, "frame");
}

}  // namespace sam2rt::cli
