// Replays every input the fuzz targets (fuzz/) ever failed on, kept in
// tests/regressions/ and named after their target. Each must now be accepted
// or refused with a one-line Error; the sanitizer build of this suite also
// checks that no replay reads out of bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "../fuzz/fuzz_inputs.h"
#include "cli_runner.h"
#include "core/error.h"

namespace sam2rt::testing {
namespace {

using Replay = std::function<void(const uint8_t*, size_t)>;

const std::map<std::string, Replay>& replays_by_prefix() {
  static const std::map<std::string, Replay> replays = {
      {"torch_checkpoint_", fuzz::load_torch_checkpoint_bytes},
      {"safetensors_", fuzz::read_safetensors_bytes},
      {"config_yaml_", fuzz::parse_config_yaml_bytes},
      {"image_", fuzz::decode_image_bytes_and_preprocess},
      {"prompt_", fuzz::validate_prompt_text},
  };
  return replays;
}

TEST(FuzzRegressions, EveryCrashInputIsNowHandled) {
  const std::filesystem::path dir = std::filesystem::path(SAM2RT_SOURCE_DIR) / "tests" / "regressions";
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename() == "README.md") continue;
    const std::string name = entry.path().filename().string();
    const Replay* replay = nullptr;
    for (const auto& [prefix, function] : replays_by_prefix()) {
      if (name.rfind(prefix, 0) == 0) replay = &function;
    }
    ASSERT_NE(replay, nullptr) << name << " is not named after a fuzz target";
    const std::string bytes = read_text(entry.path());
    try {
      (*replay)(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_FALSE(message.empty()) << name;
      EXPECT_TRUE(std::none_of(message.begin(), message.end(),
                               [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
          << name << ": " << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
    ++replayed;
  }
  EXPECT_GE(replayed, 3);
}

}  // namespace
}  // namespace sam2rt::testing
