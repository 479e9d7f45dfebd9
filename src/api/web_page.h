#pragma once

#include <string_view>

namespace sam2rt {

// The single page `sam2rt serve` answers at "/": plain HTML, CSS and JavaScript
// that talk to the server's JSON API, compiled into the binary so that serving
// needs no files beside it.
std::string_view web_page_html();

}  // namespace sam2rt
