#include "io/base64.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace sam2rt {
namespace {

TEST(Base64Decode, DecodesTheRfc4648VectorsWithAndWithoutPadding) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"Zg==", "f"},       {"Zm8=", "fo"},
                                                         {"Zm9v", "foo"},  {"Zm9vYg==", "foob"}, {"Zm9vYmE=", "fooba"},
                                                         {"Zm9vYmFy", "foobar"}};
  for (const auto& [text, bytes] : vectors) {
    EXPECT_EQ(base64_decode(text, "t"), bytes) << text;
    std::string unpadded = text;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    EXPECT_EQ(base64_decode(unpadded, "t"), bytes) << unpadded;
  }
  EXPECT_EQ(base64_decode("Zm9v\r\nYmFy", "t"), "foobar");
  EXPECT_EQ(base64_decode("//79", "t"), "\xff\xfe\xfd");
}

TEST(Base64Decode, RefusesWhatIsNotBase64AndNamesTheOrigin) {
  for (const char* text : {"Zm9v!", "Zm9v-_", "Zg==Zg", "Z", "Zm9vY", "Zg===", "Zm\x80v"}) {
    try {
      base64_decode(text, "\"image\"");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"image\""), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sam2rt
