// The --prompts file parser on its own: the schema, and every refusal one line
// that starts with the origin (mutated files included).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api/object_prompts.h"
#include "core/error.h"

namespace sam2rt {
namespace {

const std::string kOrigin = "--prompts 'p.json'";
const std::string kValid = R"([
  {"name": "cat", "points": [[110, 41], [203.5, 55, 0]], "box": [80, 15, 140, 65]},
  {"box": [1, 2, 3, 4]},
  {"mask_input": "sub/logits.safetensors", "points": [[1, 2, 1]]}
])";

TEST(ObjectPrompts, ParsesEveryField) {
  const std::vector<ObjectPrompt> objects = parse_object_prompts(kValid, kOrigin);
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[0].name, "cat");
  ASSERT_EQ(objects[0].prompt.points.size(), 2u);
  EXPECT_EQ(objects[0].prompt.points[0].x, 110.0f);
  EXPECT_EQ(objects[0].prompt.points[0].label, 1) << "a point without a label is on the object";
  EXPECT_EQ(objects[0].prompt.points[1].x, 203.5f);
  EXPECT_EQ(objects[0].prompt.points[1].label, 0);
  ASSERT_TRUE(objects[0].prompt.box.has_value());
  EXPECT_EQ((*objects[0].prompt.box)[2], 140.0f);
  EXPECT_TRUE(objects[1].name.empty());
  EXPECT_TRUE(objects[1].prompt.points.empty());
  EXPECT_EQ(objects[2].mask_input_path, "sub/logits.safetensors");
  EXPECT_FALSE(objects[2].prompt.box.has_value());
  EXPECT_TRUE(objects[2].prompt.mask_input.empty()) << "the caller reads the mask file";
}

TEST(ObjectPrompts, RefusalsNameTheObjectAndField) {
  auto message = [](const std::string& text) {
    try {
      parse_object_prompts(text, kOrigin);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(R"([{"box": [1, 2]}])"), kOrigin + R"(: object 0, "box": must be [x0, y0, x1, y1], got [1,2])");
  EXPECT_EQ(message(R"([{"box": [1, 2, 3, 4]}, {"points": [[1, 2, 0.5]]}])"),
            kOrigin + R"(: object 1, "points[0][2]": label must be 1 (object) or 0 (background))");
  EXPECT_EQ(message(R"([{"points": []}])"), kOrigin + ": object 0: has no prompt: give points, a box or a mask_input");
  EXPECT_EQ(message(R"([{"name": 7, "box": [1, 2, 3, 4]}])"), kOrigin + R"(: object 0, "name": must be a string, got 7)");
  EXPECT_EQ(message(R"([{"mask_input": ""}])"),
            kOrigin + R"(: object 0, "mask_input": must be the name of a .safetensors file, got "")");
  EXPECT_EQ(message("[3]"), kOrigin + R"(: object 0: must be a JSON object like {"points": [[x, y]]}, got 3)");
}

// Every truncation and many byte changes of a valid file end in objects or in
// one printable line from the origin, never in another exception.
TEST(ObjectPrompts, MutatedFilesGiveObjectsOrOneLineErrors) {
  auto check = [](const std::string& text) {
    try {
      parse_object_prompts(text, kOrigin);
    } catch (const Error& e) {
      const std::string message = e.what();
      ASSERT_EQ(message.rfind(kOrigin, 0), 0u) << message;
      for (char c : message) ASSERT_GE(static_cast<unsigned char>(c), 0x20) << message;
    }
  };
  for (size_t length = 0; length <= kValid.size(); ++length) check(kValid.substr(0, length));
  uint32_t state = 2024;
  const std::string replacements = "[]{}\",:0-.e9 \n\x01\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string text = kValid;
    for (int change = 0; change < 1 + i % 3; ++change) {
      state = state * 1664525u + 1013904223u;
      const size_t at = (state >> 8) % text.size();
      text[at] = replacements[(state >> 4) % replacements.size()];
    }
    check(text);
  }
}

}  // namespace
}  // namespace sam2rt
