#include "backends/op_types.h"

#include <string>

#include "core/error.h"

namespace sam2rt {

const char* precision_name(Precision precision) { return precision == Precision::bf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view name) {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    if (name == precision_name(precision)) return precision;
  }
  throw Error("unknown precision '" + std::string(name) + "': use fp32 or bf16");
}

}  // namespace sam2rt
