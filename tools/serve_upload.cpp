#include "serve_upload.h"

#include "http_error.h"

namespace sam2rt::cli {

const std::string& uploaded_bytes(const httplib::Request& req, const UploadKind& kind) {
  if (!req.is_multipart_form_data()) {
    if (req.body.empty()) throw HttpError(400, "empty upload: send " + kind.content + " as the body");
    return req.body;
  }
  const httplib::MultipartFormData* file = nullptr;
  for (const auto& [name, part] : req.files) {
    if (part.filename.empty()) continue;
    if (file) throw HttpError(400, "multipart upload holds several files; send one " + kind.noun + " per request");
    file = &part;
  }
  if (!file && req.files.size() == 1) file = &req.files.begin()->second;
  if (!file) {
    throw HttpError(400, "multipart upload holds no file: send the " + kind.noun + " as a file field (curl -F file=@" +
                             kind.example + ")");
  }
  if (file->content.empty()) throw HttpError(400, "the uploaded file '" + file->filename.substr(0, 64) + "' is empty");
  return file->content;
}

}  // namespace sam2rt::cli
