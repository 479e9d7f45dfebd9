#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace sam2rt {

// Reads an HTTP request body that must be one JSON object, for the request
// parsers of `sam2rt serve` (segment_request, everything_request). Malformed JSON,
// a number out of double's range (1e999) or anything but an object throws Error
// with one line; `contents` says what the object holds ("of generator
// parameters"), for the message.
nlohmann::json parse_json_object(std::string_view body, std::string_view contents = {});

}  // namespace sam2rt
