#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "core/error.h"

namespace sam2rt::cli {

// Typed reads of the labelling tools' JSON requests: each throws Error with one
// line naming `where` and the field when it is missing or of another type.

inline const nlohmann::json& required_field(const nlohmann::json& object, const std::string& name,
                                            const std::string& where) {
  if (!object.is_object()) throw Error(where + " must be a JSON object");
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) throw Error(where + ": \"" + name + "\" is missing");
  return *it;
}

inline const nlohmann::json& required_array(const nlohmann::json& object, const std::string& name,
                                            const std::string& where) {
  const nlohmann::json& value = required_field(object, name, where);
  if (!value.is_array()) throw Error(where + ": \"" + name + "\" must be a list");
  return value;
}

inline std::string required_string(const nlohmann::json& object, const std::string& name, const std::string& where) {
  const nlohmann::json& value = required_field(object, name, where);
  if (!value.is_string()) throw Error(where + ": \"" + name + "\" must be a string");
  return value.get<std::string>();
}

inline double finite_number(const nlohmann::json& value, const std::string& what) {
  if (!value.is_number()) throw Error(what + " must be a number");
  const double number = value.get<double>();
  if (!std::isfinite(number)) throw Error(what + " must be finite");
  return number;
}

inline double required_number(const nlohmann::json& object, const std::string& name, const std::string& where) {
  return finite_number(required_field(object, name, where), where + ": \"" + name + "\"");
}

}  // namespace sam2rt::cli
