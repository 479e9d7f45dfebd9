#pragma once

// What the C API's source files share: the handle types behind the opaque
// pointers of sam2rt_c.h and the conversion of C++ exceptions into status codes.

#include <exception>
#include <memory>
#include <new>
#include <string>

#include "api/predictor.h"
#include "api/sam2_model.h"
#include "core/error.h"
#include "io/image.h"

struct sam2rt_model {
  std::shared_ptr<const sam2rt::Sam2Model> model;
  std::string description;  // recorded in saved feature files, e.g. "tiny, sam2.1_hiera_tiny.pt"
};

struct sam2rt_predictor {
  sam2rt::Predictor predictor;
  std::string model_description;
};

namespace sam2rt::c_api {

// sam2rt_last_error()'s text: per thread, cleared by every guarded call.
inline std::string& last_error() {
  thread_local std::string message;
  return message;
}

// A caller's interleaved RGB buffer of width*height pixels, size-checked, as an image.
inline RgbImage rgb_image(const uint8_t* rgb, int32_t width, int32_t height) {
  if (!rgb) throw Error("rgb is NULL");
  if (width <= 0 || height <= 0 || static_cast<int64_t>(width) * height > kDefaultMaxImagePixels) {
    throw Error("image size " + std::to_string(width) + "x" + std::to_string(height) +
                " is empty or above the pixel limit");
  }
  RgbImage image;
  image.width = width;
  image.height = height;
  image.pixels.assign(rgb, rgb + static_cast<size_t>(width) * height * 3);
  return image;
}

// Runs body; an exception becomes its message in last_error() and `failure` is
// returned, so that nothing C++ crosses the C boundary.
template <typename F>
auto guarded(F&& body, decltype(body()) failure) -> decltype(body()) {
  try {
    last_error().clear();
    return body();
  } catch (const std::bad_alloc&) {
    last_error() = "out of memory";
  } catch (const std::exception& e) {
    last_error() = e.what();
  } catch (...) {
    last_error() = "unknown error";
  }
  return failure;
}

}  // namespace sam2rt::c_api
