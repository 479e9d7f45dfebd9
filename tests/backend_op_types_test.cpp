// The Backend interface's own operand types (backends/op_types.h).
#include "backends/op_types.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace sam2rt {
namespace {

TEST(BackendOpTypes, PrecisionNamesRoundTripAndOthersAreRefused) {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    EXPECT_EQ(parse_precision(precision_name(precision)), precision);
  }
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  try {
    parse_precision("fp16");
    ADD_FAILURE() << "fp16 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown precision 'fp16': use fp32 or bf16");
  }
  EXPECT_THROW(parse_precision("BF16"), Error);
  EXPECT_THROW(parse_precision(""), Error);
}

}  // namespace
}  // namespace sam2rt
