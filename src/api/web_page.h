#pragma once

#include <span>
#include <string_view>

namespace sam2rt {

// One file of the page `sam2rt serve` answers: web/ in the source tree, compiled
// into the binary at build time (cmake/embed_file.cmake) so that serving needs
// no files beside it.
struct WebFile {
  std::string_view url_path;  // where the page asks for it: "/", "/app.css", ...
  std::string_view content_type;
  std::string_view body;
};

// Every file of the page, the page itself ("/") first.
std::span<const WebFile> web_files();

}  // namespace sam2rt
