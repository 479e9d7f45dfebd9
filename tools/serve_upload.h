#pragma once

#include <httplib.h>

#include <string>

namespace sam2rt::cli {

// What an upload endpoint of `sam2rt serve` takes, for its error messages.
struct UploadKind {
  std::string noun;     // "image", "video"
  std::string content;  // what the body holds: "the image file's bytes (PNG or JPEG)"
  std::string example;  // a file name for the curl hint: "photo.jpg"
};

// The file of an upload: the body's bytes, or the one file of a
// multipart/form-data body (curl -F file=@photo.jpg; the field's name does not
// matter), or its one field when it has no file (curl -F "file=<photo.jpg").
// HttpError 400 for an empty body, a form without a file or with several, or an
// empty file.
const std::string& uploaded_bytes(const httplib::Request& req, const UploadKind& kind);

}  // namespace sam2rt::cli
