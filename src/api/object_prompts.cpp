#include "api/object_prompts.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

namespace {

using nlohmann::json;

// A JSON value quoted in an error: short and printable.
std::string quoted(const json& value) { return printable(value.dump(), 60); }

class ObjectParser {
 public:
  ObjectParser(const std::string& origin, size_t index)
      : prefix_(origin + ": object " + std::to_string(index)) {}

  ObjectPrompt parse(const json& item) const {
    if (!item.is_object()) fail("", "must be a JSON object like {\"points\": [[x, y]]}, got " + quoted(item));
    ObjectPrompt object;
    for (const auto& [key, value] : item.items()) {
      if (key == "name") {
        if (!value.is_string()) fail("name", "must be a string, got " + quoted(value));
        object.name = value.get<std::string>();
      } else if (key == "points") {
        object.prompt.points = points(value);
      } else if (key == "box") {
        object.prompt.box = box(value);
      } else if (key == "mask_input") {
        if (!value.is_string() || value.get<std::string>().empty()) {
          fail("mask_input", "must be the name of a .safetensors file, got " + quoted(value));
        }
        object.mask_input_path = value.get<std::string>();
      } else {
        fail(printable(key, 40), "is not a field of an object; the fields are name, points, box and mask_input");
      }
    }
    if (object.prompt.points.empty() && !object.prompt.box && object.mask_input_path.empty()) {
      fail("", "has no prompt: give points, a box or a mask_input");
    }
    return object;
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw Error(prefix_ + (field.empty() ? "" : ", \"" + field + "\"") + ": " + problem);
  }

  float number(const json& value, const std::string& field) const {
    if (!value.is_number()) fail(field, "must be a number, got " + quoted(value));
    const double v = value.get<double>();
    if (!std::isfinite(v) || std::fabs(v) > 1e30) fail(field, "must be a finite number, got " + quoted(value));
    return static_cast<float>(v);
  }

  std::vector<PointPrompt> points(const json& value) const {
    if (!value.is_array()) fail("points", "must be a list of [x, y] or [x, y, label], got " + quoted(value));
    if (value.size() > static_cast<size_t>(kMaxPoints)) {
      fail("points", "has " + std::to_string(value.size()) + " points (at most " + std::to_string(kMaxPoints) + ")");
    }
    std::vector<PointPrompt> out;
    for (size_t i = 0; i < value.size(); ++i) {
      const json& p = value[i];
      const std::string field = "points[" + std::to_string(i) + "]";
      if (!p.is_array() || (p.size() != 2 && p.size() != 3)) {
        fail(field, "must be [x, y] or [x, y, label], got " + quoted(p));
      }
      PointPrompt point{number(p[0], field + "[0]"), number(p[1], field + "[1]"), 1};
      if (p.size() == 3) {
        const float label = number(p[2], field + "[2]");
        if (label != 0.0f && label != 1.0f) fail(field + "[2]", "label must be 1 (object) or 0 (background)");
        point.label = static_cast<int>(label);
      }
      out.push_back(point);
    }
    return out;
  }

  std::array<float, 4> box(const json& value) const {
    if (!value.is_array() || value.size() != 4) fail("box", "must be [x0, y0, x1, y1], got " + quoted(value));
    std::array<float, 4> out{};
    for (size_t i = 0; i < 4; ++i) out[i] = number(value[i], "box[" + std::to_string(i) + "]");
    return out;
  }

  std::string prefix_;
};

}  // namespace

std::vector<ObjectPrompt> parse_object_prompts(std::string_view text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(origin + ": not valid JSON (error at byte " + std::to_string(e.byte) + ")");
  } catch (const json::out_of_range&) {
    throw Error(origin + ": holds a number out of range (e.g. 1e999); coordinates must be finite");
  }
  if (!document.is_array()) {
    throw Error(origin + ": must be a JSON list of objects like [{\"points\": [[x, y]]}, {\"box\": [x0, y0, x1, y1]}]");
  }
  if (document.empty()) throw Error(origin + ": the list of objects is empty");
  if (document.size() > kMaxObjects) {
    throw Error(origin + ": " + std::to_string(document.size()) + " objects; at most " + std::to_string(kMaxObjects) +
                " per run");
  }
  std::vector<ObjectPrompt> objects;
  objects.reserve(document.size());
  for (size_t i = 0; i < document.size(); ++i) objects.push_back(ObjectParser(origin, i).parse(document[i]));
  return objects;
}

}  // namespace sam2rt
