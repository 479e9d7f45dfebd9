#pragma once

#include <memory>
#include <string>

#include "api/sam2_model.h"

namespace sam2rt::python {

// A model as build_sam2 returns it: the engine's immutable model plus what the
// feature files record about its weights.
struct LoadedModel {
  std::shared_ptr<const Sam2Model> model;
  std::string weights_description;
};

}  // namespace sam2rt::python
