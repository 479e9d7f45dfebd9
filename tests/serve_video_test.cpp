// The video API of `sam2rt serve` (docs/SERVE.md, "Video") on the real binary:
// a lossless video of the "leave" clip (tests/video/clips/leave, whose object
// leaves the frame) uploaded, its frames served pixel for pixel, prompts and
// propagation against the in-process VideoPredictor on the same file (micro
// checkpoint), object removal and reset, every kind of bad request, and the
// server's folder of uploads, empty after a refused upload and gone after
// SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/binary_mask.h"
#include "api/video_input.h"
#include "api/video_predictor.h"
#include "cli_runner.h"
#include "io/image.h"
#include "io/jpeg_folder_frames.h"
#include "io/mask_rle.h"
#include "io/video_frames.h"
#include "scoped_environment.h"
#include "server_process.h"
#include "test_paths.h"
#include "test_video_writer.h"

namespace sam2rt::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kJsonType = "application/json; charset=utf-8";
constexpr int kFrames = 8, kWidth = 256, kHeight = 144;  // the leave clip's

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<RgbImage> leave_frames() {
  const std::string folder = std::string(SAM2RT_SOURCE_DIR) + "/tests/video/clips/leave";
  std::vector<RgbImage> frames;
  const auto source = open_video_frames(folder);
  while (std::optional<RgbImage> frame = source->next()) frames.push_back(std::move(*frame));
  return frames;
}

std::shared_ptr<const Sam2Model> micro_checkpoint() {
  static const auto model = [] {
    ModelSource source;
    source.checkpoint_path = fixtures_dir() + "/micro/micro.pt";
    source.config_path = fixtures_dir() + "/micro/sam2.1_micro.yaml";
    return Sam2Model::load(source);
  }();
  return model;
}

// Row-major 0/1 masks of a predictor's answer, by object id (logit > 0, as the server thresholds).
std::map<int64_t, std::vector<uint8_t>> expected_masks(const VideoFrameMasks& result, int width, int height) {
  const int64_t objects = static_cast<int64_t>(result.obj_ids.size());
  const Tensor planes = result.video_res_masks.reshaped({objects, height, width});
  std::map<int64_t, std::vector<uint8_t>> masks;
  for (int64_t i = 0; i < objects; ++i) {
    std::vector<uint8_t> mask = threshold_mask(planes, i, 0.0f);
    for (uint8_t& v : mask) v = v != 0;
    masks[result.obj_ids[static_cast<size_t>(i)]] = std::move(mask);
  }
  return masks;
}

// The server's {"frame", "objects": [{"obj_id", "rle"}]} with uncompressed RLE, as 0/1 masks by object id.
std::map<int64_t, std::vector<uint8_t>> served_masks(const json& answer) {
  std::map<int64_t, std::vector<uint8_t>> masks;
  for (const json& object : answer["objects"]) {
    const json& rle = object["rle"];
    const UncompressedRle decoded{rle["size"][0].get<int64_t>(), rle["size"][1].get<int64_t>(),
                                  rle["counts"].get<std::vector<int64_t>>()};
    std::vector<uint8_t> mask = decode_rle(decoded);
    int64_t area = 0;
    for (const uint8_t v : mask) area += v != 0;
    EXPECT_EQ(object["area"].get<int64_t>(), area) << "object " << object["obj_id"];
    masks[object["obj_id"].get<int64_t>()] = std::move(mask);
  }
  return masks;
}

int64_t total_area(const std::map<int64_t, std::vector<uint8_t>>& masks) {
  int64_t area = 0;
  for (const auto& [id, mask] : masks) area += std::count(mask.begin(), mask.end(), 1);
  return area;
}

class ServeVideo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir("serve_video");
    fs::create_directories(scratch_->file("tmp"));
    video_path_ = new std::string(scratch_->file("leave.mkv"));
    write_test_video(*video_path_, leave_frames(), kLosslessFfv1);
    // The server keeps its uploads under TMPDIR: here, where the test can look.
    const ScopedEnvironment tmpdir("TMPDIR", scratch_->file("tmp").c_str());
    server_ = new ServerProcess({}, 0, micro_checkpoint_args());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete video_path_;
    delete scratch_;
  }
  void SetUp() override { ASSERT_GT(server_->port(), 0) << "no URL line from sam2rt serve: '" << server_->url() << "'"; }

  // The files in the server's folder of uploads (none before the first upload).
  static std::vector<std::string> uploaded_files() {
    std::vector<std::string> files;
    for (const auto& folder : fs::directory_iterator(scratch_->file("tmp"))) {
      for (const auto& file : fs::directory_iterator(folder.path())) files.push_back(file.path().string());
    }
    return files;
  }

  static json call(const std::string& method, const std::string& path, const std::string& body = "",
                   int expected_status = 200) {
    auto client = server_->client();
    const httplib::Result res = method == "GET"      ? client.Get(path)
                                : method == "DELETE" ? client.Delete(path)
                                                     : client.Post(path, body, "application/json");
    if (!res) {
      ADD_FAILURE() << method << " " << path << ": no response: " << httplib::to_string(res.error());
      return json();
    }
    EXPECT_EQ(res->status, expected_status) << method << " " << path << " " << body << ": " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), kJsonType) << path;
    json answer;
    try {
      answer = json::parse(res->body);
    } catch (const json::exception&) {
      ADD_FAILURE() << method << " " << path << ": not JSON: " << res->body.substr(0, 200);
    }
    return answer;
  }

  static std::string upload(const std::string& bytes) {
    auto client = server_->client();
    const auto res = client.Post("/v1/videos", bytes, "application/octet-stream");
    if (!res || res->status != 201) {
      ADD_FAILURE() << "upload failed: " << (res ? res->status : -1) << " " << (res ? res->body : "");
      return "";
    }
    return json::parse(res->body)["id"];
  }

  // Polls until the propagation is no longer running.
  static json wait_for_propagation(const std::string& id) {
    json progress;
    for (int i = 0; i < 1200; ++i) {
      progress = call("GET", "/v1/videos/" + id + "/propagate");
      if (progress["state"] != "running") return progress;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "the propagation did not finish in 60 s: " << progress.dump();
    return progress;
  }

  static ScratchDir* scratch_;
  static std::string* video_path_;
  static ServerProcess* server_;
};

ScratchDir* ServeVideo::scratch_ = nullptr;
std::string* ServeVideo::video_path_ = nullptr;
ServerProcess* ServeVideo::server_ = nullptr;

TEST_F(ServeVideo, UploadGivesTheVideosSizeAndServesItsFramesPixelForPixel) {
  auto client = server_->client();
  const auto res = client.Post("/v1/videos", read_bytes(*video_path_), "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  const json video = json::parse(res->body);
  EXPECT_EQ(video["frames"], kFrames);
  EXPECT_EQ(video["width"], kWidth);
  EXPECT_EQ(video["height"], kHeight);
  EXPECT_DOUBLE_EQ(video["fps"].get<double>(), 25.0);
  const std::string id = video["id"];
  EXPECT_EQ(res->get_header_value("Location"), "/v1/videos/" + id);

  const std::vector<RgbImage> frames = leave_frames();
  // Backwards too: the reader seeks.
  for (const int f : {3, 7, 0, 5}) {
    SCOPED_TRACE(f);
    const auto png = client.Get("/v1/videos/" + id + "/frames/" + std::to_string(f) + "?format=png");
    ASSERT_TRUE(png);
    ASSERT_EQ(png->status, 200) << png->body;
    EXPECT_EQ(png->get_header_value("Content-Type"), "image/png");
    const RgbImage decoded =
        decode_image_bytes(reinterpret_cast<const uint8_t*>(png->body.data()), png->body.size(), "frame");
    EXPECT_EQ(decoded.width, kWidth);
    EXPECT_EQ(decoded.height, kHeight);
    EXPECT_TRUE(decoded.pixels == frames[static_cast<size_t>(f)].pixels) << "frame " << f << " differs";
  }
  const auto jpeg = client.Get("/v1/videos/" + id + "/frames/2");
  ASSERT_TRUE(jpeg);
  ASSERT_EQ(jpeg->status, 200);
  EXPECT_EQ(jpeg->get_header_value("Content-Type"), "image/jpeg");
  EXPECT_EQ(decode_image_bytes(reinterpret_cast<const uint8_t*>(jpeg->body.data()), jpeg->body.size(), "jpeg").width,
            kWidth);

  const json info = call("GET", "/v1/videos/" + id);
  EXPECT_EQ(info["frames"], kFrames);
  EXPECT_EQ(info["objects"], json::array());
  EXPECT_EQ(info["propagation"]["state"], "idle");

  // An MP4 (H.264 where FFmpeg has it, as `sam2rt track --overlay-video` writes it) as a form upload, as
  // `curl -F file=@clip.mp4` sends it.
  const std::string mp4 = scratch_->file("leave.mp4");
  const CliResult made = run_cli({"track", "--synthetic-weights", "0", "--config", fixtures_dir() + "/micro/sam2.1_micro.yaml",
                                  "--video", std::string(SAM2RT_SOURCE_DIR) + "/tests/video/clips/leave", "--point",
                                  "0:1,1", "--out-dir", scratch_->file("masks"), "--overlay-video", mp4, "--quiet"},
                                 *scratch_, 600);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto form = client.Post("/v1/videos", httplib::MultipartFormDataItems{{"file", read_bytes(mp4), "leave.mp4",
                                                                               "video/mp4"}});
  ASSERT_TRUE(form);
  ASSERT_EQ(form->status, 201) << form->body;
  EXPECT_EQ(json::parse(form->body)["frames"], kFrames);
  EXPECT_EQ(call("DELETE", "/v1/videos/" + json::parse(form->body)["id"].get<std::string>())["deleted"],
            json::parse(form->body)["id"]);
  EXPECT_EQ(call("GET", "/healthz")["videos"].get<int>(), 1);
  call("DELETE", "/v1/videos/" + id);
  EXPECT_TRUE(uploaded_files().empty());
}

// Two objects (a click on frame 0, a click on frame 5), then forward and reverse
// propagation: every answer equals the VideoPredictor's on the same file.
TEST_F(ServeVideo, PromptsAndPropagationEqualTheVideoPredictor) {
  const std::string id = upload(read_bytes(*video_path_));
  ASSERT_FALSE(id.empty());
  VideoPredictor reference(micro_checkpoint(), video_frames_from_path(*video_path_, micro_checkpoint()->config().image_size),
                           VideoPredictorOptions{.tracking = std::nullopt, .keep_all_outputs = false});

  const json first = call("POST", "/v1/videos/" + id + "/prompts",
                          R"({"frame": 0, "obj_id": 1, "points": [[49, 41, 1]], "format": "rle"})");
  const auto expected_first = expected_masks(reference.add_new_points_or_box(0, 1, {{49, 41}}, {1}), kWidth, kHeight);
  EXPECT_EQ(first["frame"], 0);
  EXPECT_GE(first["timing_ms"]["predict"].get<double>(), 0.0);
  EXPECT_TRUE(served_masks(first) == expected_first);
  EXPECT_GT(total_area(expected_first), 100) << "the click should find the object";

  const json second = call("POST", "/v1/videos/" + id + "/prompts",
                           R"({"frame": 5, "obj_id": 2, "points": [[150, 70], [30, 30, 0]], "format": "rle"})");
  const auto expected_second =
      expected_masks(reference.add_new_points_or_box(5, 2, {{150, 70}, {30, 30}}, {1, 0}), kWidth, kHeight);
  ASSERT_EQ(second["objects"].size(), 2u) << "every object's mask on the frame";
  EXPECT_TRUE(served_masks(second) == expected_second);
  // The other formats of the same masks.
  const json as_png = call("GET", "/v1/videos/" + id + "/masks/5");
  ASSERT_EQ(as_png["objects"].size(), 2u);
  EXPECT_TRUE(as_png["objects"][0].contains("png_base64"));
  const json as_coco = call("GET", "/v1/videos/" + id + "/masks/5?format=coco_rle");
  const json& coco = as_coco["objects"][1]["rle"];
  EXPECT_EQ(decode_rle(coco_rle_from_string(coco["counts"], kHeight, kWidth)), expected_second.at(2));

  const json started = call("POST", "/v1/videos/" + id + "/propagate", R"({"reverse": true})", 202);
  // Forward from frame 0 (8 frames), backward from frame 5 (6 frames).
  EXPECT_EQ(started["frames_total"], kFrames + 6);
  const json done = wait_for_propagation(id);
  EXPECT_EQ(done["state"], "done") << done.dump();
  EXPECT_EQ(done["frames_done"], kFrames + 6);

  std::map<int64_t, std::map<int64_t, std::vector<uint8_t>>> final_masks;
  for (const bool reverse : {false, true}) {
    VideoPredictor::Propagation pass = reverse ? reference.propagate_in_video(5, std::nullopt, true)
                                               : reference.propagate_in_video(std::nullopt, std::nullopt, false);
    while (std::optional<VideoFrameMasks> result = pass.next()) {
      final_masks[result->frame_idx] = expected_masks(*result, kWidth, kHeight);
    }
  }
  ASSERT_EQ(final_masks.size(), static_cast<size_t>(kFrames));
  int64_t frames_with_object = 0, frames_without = 0;
  for (const auto& [frame, expected] : final_masks) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    const json answer = call("GET", "/v1/videos/" + id + "/masks/" + std::to_string(frame) + "?format=rle");
    EXPECT_EQ(answer["frame"], frame);
    EXPECT_TRUE(served_masks(answer) == expected);
    (expected.at(1) == std::vector<uint8_t>(expected.at(1).size(), 0) ? frames_without : frames_with_object)++;
  }
  EXPECT_GT(frames_with_object, 0);

  const json info = call("GET", "/v1/videos/" + id);
  EXPECT_EQ(info["objects"], json::array({1, 2}));
  EXPECT_EQ(info["frames_with_masks"], kFrames);
  EXPECT_EQ(info["propagation"]["state"], "done");
  call("DELETE", "/v1/videos/" + id);
}

TEST_F(ServeVideo, RemovingAnObjectAndResettingForgetTheirMasks) {
  const std::string id = upload(read_bytes(*video_path_));
  ASSERT_FALSE(id.empty());
  const std::string base = "/v1/videos/" + id;
  call("POST", base + "/prompts", R"({"frame": 0, "obj_id": 1, "points": [[49, 41]]})");
  call("POST", base + "/prompts", R"({"frame": 2, "obj_id": 4, "box": [100, 20, 200, 120]})");
  call("POST", base + "/propagate", "{}", 202);
  EXPECT_EQ(wait_for_propagation(id)["state"], "done");
  EXPECT_EQ(call("GET", base + "/masks/6")["objects"].size(), 2u);

  // Clearing object 4's only prompted frame leaves it without prompts: propagating is refused, naming it.
  const json cleared = call("POST", base + "/clear?format=rle", R"({"frame": 2, "obj_id": 4})");
  EXPECT_EQ(cleared["frame"], 2);
  const json refused = call("POST", base + "/propagate", "", 400);
  EXPECT_NE(refused["error"].get<std::string>().find("object id 4"), std::string::npos) << refused.dump();

  EXPECT_EQ(call("DELETE", base + "/objects/4")["objects"], json::array({1}));
  for (int f = 0; f < kFrames; ++f) {
    const json masks = call("GET", base + "/masks/" + std::to_string(f));
    ASSERT_EQ(masks["objects"].size(), 1u) << "frame " << f;
    EXPECT_EQ(masks["objects"][0]["obj_id"], 1);
  }
  call("DELETE", base + "/objects/4", "", 404);

  EXPECT_EQ(call("POST", base + "/reset", "")["reset"], id);
  EXPECT_EQ(call("GET", base)["objects"], json::array());
  EXPECT_EQ(call("GET", base + "/masks/0")["objects"], json::array());
  const json after_reset = call("POST", base + "/propagate", "{}", 400);
  EXPECT_NE(after_reset["error"].get<std::string>().find("No input points"), std::string::npos);
  call("DELETE", base);
  call("GET", base, "", 404);
}

TEST_F(ServeVideo, BadRequestsGetA4xxJsonErrorAndLeaveNothingBehind) {
  const std::string video = read_bytes(*video_path_);
  auto client = server_->client();

  // Uploads that are not whole videos: refused, and their files removed.
  struct Upload {
    std::string bytes;
    int status;
    std::string message;
  };
  const std::vector<Upload> uploads = {
      {video.substr(0, video.size() / 2), 400, "uploaded video"},
      {video.substr(0, 100), 400, "uploaded video"},
      {std::string(4096, 'x'), 400, "uploaded video"},
      {"", 400, "empty upload"},
      {std::string(51 * 1024 * 1024, '\0'), 413, ""},
  };
  for (const Upload& u : uploads) {
    SCOPED_TRACE(std::to_string(u.bytes.size()) + " bytes");
    const auto res = client.Post("/v1/videos", u.bytes, "application/octet-stream");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, u.status) << res->body;
    const std::string error = json::parse(res->body)["error"];
    EXPECT_NE(error.find(u.message), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(error.find(scratch_->file("tmp")), std::string::npos) << "names the server's file: " << error;
    EXPECT_TRUE(uploaded_files().empty());
  }

  const std::string id = upload(video);
  ASSERT_FALSE(id.empty());
  const std::string base = "/v1/videos/" + id;
  const json before_prompts = call("POST", base + "/propagate", "{}", 400);
  EXPECT_NE(before_prompts["error"].get<std::string>().find("No input points or masks"), std::string::npos)
      << before_prompts.dump();

  struct Case {
    std::string method, path, body;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"POST", base + "/prompts", R"({"frame": 8, "obj_id": 1, "points": [[1, 1]]})", 400, "frame 8 is outside"},
      {"POST", base + "/prompts", R"({"frame": -1, "obj_id": 1, "points": [[1, 1]]})", 400, "outside"},
      {"POST", base + "/prompts", R"({"frame": 1.5, "obj_id": 1, "points": [[1, 1]]})", 400, "whole number"},
      {"POST", base + "/prompts", R"({"obj_id": 1, "points": [[1, 1]]})", 400, "\"frame\" is missing"},
      {"POST", base + "/prompts", R"({"frame": 0, "points": [[1, 1]]})", 400, "\"obj_id\" is missing"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": -2, "points": [[1, 1]]})", 400, "obj_id"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": 1})", 400, "no prompt"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": 1, "points": [[257, 1]]})", 400, "outside the 256x144"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": 1, "points": [[1, 1, 3]]})", 400, "label 3"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": 1, "points": [[1, 1]], "multimask": true})", 400,
       "multimask"},
      {"POST", base + "/prompts", R"({"frame": 0, "obj_id": 1, "points": [[1, 1]], "pts": 1})", 400,
       "unknown field \"pts\""},
      {"POST", base + "/prompts", "{", 400, "not valid JSON"},
      {"POST", base + "/clear", R"({"frame": 0, "obj_id": 9})", 404, "unknown object id 9"},
      {"POST", base + "/clear", R"({"frame": 9, "obj_id": 1})", 400, "frame 9 is outside"},
      {"DELETE", base + "/objects/9", "", 404, "unknown object id 9"},
      {"DELETE", base + "/objects/nine", "", 400, "not a whole number"},
      {"POST", base + "/propagate", R"({"start_frame": 8})", 400, "start_frame 8 is outside"},
      {"POST", base + "/propagate", R"({"max_frames": -1})", 400, "max_frames"},
      {"POST", base + "/propagate", R"({"backwards": true})", 400, "unknown field \"backwards\""},
      {"POST", base + "/propagate", R"({"reverse": "yes"})", 400, "reverse must be true or false"},
      {"GET", base + "/frames/8", "", 400, "frame 8 is outside the video's 8 frames (0..7)"},
      {"GET", base + "/frames/x1", "", 400, "not a whole number"},
      {"GET", base + "/frames/0?format=gif", "", 400, "format must be jpeg or png"},
      {"GET", base + "/masks/99", "", 400, "outside"},
      {"GET", base + "/masks/0?format=svg", "", 400, "format must be png, rle or coco_rle"},
      {"GET", "/v1/videos/0123456789abcdef0123456789abcdef", "", 404, "unknown video id"},
      {"POST", "/v1/videos/0123456789abcdef0123456789abcdef/prompts", R"({"frame": 0, "obj_id": 1, "points": [[1, 1]]})",
       404, "unknown video id"},
      {"GET", "/v1/videos/0123456789abcdef0123456789abcdef/frames/0", "", 404, "unknown video id"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body);
    const json answer = call(c.method, c.path, c.body, c.status);
    ASSERT_TRUE(answer.contains("error")) << answer.dump();
    const std::string error = answer["error"];
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Nothing above added an object.
  EXPECT_EQ(call("GET", base)["objects"], json::array());

  const std::vector<std::pair<std::string, std::string>> wrong_methods = {
      {"/v1/videos", "POST"}, {base + "/propagate", "GET, POST, DELETE"}, {base + "/frames/0", "GET"}};
  for (const auto& [path, allowed] : wrong_methods) {
    const auto res = client.Put(path, "{}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 405) << path;
    EXPECT_EQ(res->get_header_value("Allow"), allowed) << path;
  }
  EXPECT_TRUE(server_->alive());
  call("DELETE", base);
  EXPECT_TRUE(uploaded_files().empty());
}

// A long propagation (the clip 20 times over) leaves the other requests on the
// video refused with 409 until it is stopped; the frames tracked so far keep
// their masks, and prompting works again.
TEST_F(ServeVideo, APropagationRefusesPromptsUntilItIsStopped) {
  std::vector<RgbImage> frames;
  const std::vector<RgbImage> clip = leave_frames();
  for (int round = 0; round < 20; ++round) frames.insert(frames.end(), clip.begin(), clip.end());
  const std::string path = scratch_->file("long.mkv");
  write_test_video(path, frames, kLosslessFfv1);
  const std::string id = upload(read_bytes(path));
  ASSERT_FALSE(id.empty());
  const std::string base = "/v1/videos/" + id;
  const std::string prompt = R"({"frame": 0, "obj_id": 1, "points": [[49, 41]]})";
  call("POST", base + "/prompts", prompt);
  const json started = call("POST", base + "/propagate", "{}", 202);
  EXPECT_EQ(started["state"], "running");
  EXPECT_EQ(started["frames_total"], 160);

  const json busy = call("POST", base + "/prompts", prompt, 409);
  EXPECT_NE(busy["error"].get<std::string>().find("being propagated"), std::string::npos) << busy.dump();
  call("POST", base + "/propagate", "{}", 409);
  call("POST", base + "/clear", R"({"frame": 0, "obj_id": 1})", 409);
  call("DELETE", base + "/objects/1", "", 409);
  // Frames and masks can be read meanwhile.
  call("GET", base + "/masks/0");
  EXPECT_EQ(call("GET", base + "/propagate")["state"], "running");

  const json stopped = call("DELETE", base + "/propagate");
  EXPECT_EQ(stopped["state"], "cancelled") << stopped.dump();
  const int64_t tracked = stopped["frames_done"];
  EXPECT_LT(tracked, 160);
  EXPECT_EQ(call("GET", base)["frames_with_masks"].get<int64_t>(), std::max<int64_t>(tracked, 1));
  call("POST", base + "/prompts", prompt);
  call("DELETE", base);
}

// The least recently used video goes beyond --max-videos; SIGTERM removes the folder of uploads.
TEST(ServeVideoProcess, DropsTheOldestVideoBeyondMaxVideosAndRemovesItsFolderOnSigterm) {
  ScratchDir scratch("serve_video_process");
  fs::create_directories(scratch.file("tmp"));
  const std::string path = scratch.file("clip.mkv");
  write_test_video(path, leave_frames(), kLosslessFfv1);
  std::unique_ptr<ServerProcess> server;
  {
    const ScopedEnvironment tmpdir("TMPDIR", scratch.file("tmp").c_str());
    server = std::make_unique<ServerProcess>(std::vector<std::string>{"--max-videos", "2"});
  }
  ASSERT_GT(server->port(), 0);
  auto client = server->client();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    const auto res = client.Post("/v1/videos", read_bytes(path), "application/octet-stream");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 201) << res->body;
    ids.push_back(json::parse(res->body)["id"]);
  }
  EXPECT_EQ(client.Get("/v1/videos/" + ids[0])->status, 404);
  EXPECT_EQ(client.Get("/v1/videos/" + ids[1])->status, 200);
  EXPECT_EQ(client.Get("/v1/videos/" + ids[2])->status, 200);
  // Synthetic weights track too (the server loads the video modules).
  const auto prompt = client.Post("/v1/videos/" + ids[2] + "/prompts", R"({"frame": 3, "obj_id": 1, "box": [10, 10, 90, 90]})",
                                  "application/json");
  ASSERT_TRUE(prompt);
  EXPECT_EQ(prompt->status, 200) << prompt->body;
  size_t folders = 0, files = 0;
  for (const auto& folder : fs::directory_iterator(scratch.file("tmp"))) {
    ++folders;
    files += static_cast<size_t>(std::distance(fs::directory_iterator(folder.path()), fs::directory_iterator()));
  }
  EXPECT_EQ(folders, 1u);
  EXPECT_EQ(files, 2u);
  EXPECT_EQ(server->stop(), 0);
  EXPECT_TRUE(fs::is_empty(scratch.file("tmp")));
}

}  // namespace
}  // namespace sam2rt::testing
