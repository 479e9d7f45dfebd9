#include "api/json_body.h"

#include <string>

#include "core/error.h"

namespace sam2rt {

nlohmann::json parse_json_object(std::string_view body, std::string_view contents) {
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("request body is not valid JSON (error at byte " + std::to_string(e.byte) + ")");
  } catch (const nlohmann::json::out_of_range&) {
    throw Error("request body holds a number out of range (e.g. 1e999); numbers must be finite");
  }
  if (!request.is_object()) {
    std::string message = "request body must be a JSON object";
    if (!contents.empty()) message += " " + std::string(contents);
    throw Error(message + ", got " + request.type_name());
  }
  return request;
}

}  // namespace sam2rt
