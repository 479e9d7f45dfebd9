#include "api/web_page.h"

#include <array>

namespace sam2rt {

// Defined by the sources CMake generates from web/ (one per file).
namespace embedded {
extern const std::string_view web_index_html;
extern const std::string_view web_app_css;
extern const std::string_view web_app_js;
extern const std::string_view web_video_js;
}  // namespace embedded

std::span<const WebFile> web_files() {
  static const std::array<WebFile, 4> files = {{
      {"/", "text/html; charset=utf-8", embedded::web_index_html},
      {"/app.css", "text/css; charset=utf-8", embedded::web_app_css},
      {"/app.js", "text/javascript; charset=utf-8", embedded::web_app_js},
      {"/video.js", "text/javascript; charset=utf-8", embedded::web_video_js},
  }};
  return files;
}

}  // namespace sam2rt
