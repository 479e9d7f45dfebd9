// The labelling protocols of `sam2rt serve` (tools/serve_label_studio.cpp,
// serve_anylabeling.cpp, serve_cvat.cpp) against the real binary on the micro
// config with synthetic weights: the requests of tests/labelling/ replayed as each
// tool sends them, every answer field checked against the tool's schema, and the
// returned masks decoded back to pixels and compared with `sam2rt segment`'s mask
// for the same prompt.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/predictor.h"
#include "api/segment_request.h"
#include "brush_rle_decoder.h"
#include "cli_runner.h"
#include "io/base64.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "server_process.h"
#include "test_paths.h"

namespace sam2rt {
namespace {

using nlohmann::json;
using testing::fixtures_dir;
using testing::ServerProcess;

constexpr int kWidth = 288, kHeight = 112;
const std::string kUser = "ls-user", kPassword = "ls-secret", kToken = "al-token";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string images_dir() { return fixtures_dir() + "/images"; }
std::string micro_config() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string chelsea() { return images_dir() + "/chelsea_288x112.png"; }

std::string base64_of_file(const std::string& path) {
  const std::string bytes = read_bytes(path);
  return base64_encode(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// A request of tests/labelling/, with the image placeholders filled in.
std::string request(const std::string& name, const std::string& image = chelsea()) {
  std::string text = read_bytes(std::string(SAM2RT_SOURCE_DIR) + "/tests/labelling/" + name);
  EXPECT_FALSE(text.empty()) << name;
  const std::string base64 = base64_of_file(image);
  replace_all(text, "$IMAGE_DATA_URL", "data:image/png;base64," + base64);
  replace_all(text, "$IMAGE_BASE64", base64);
  return text;
}

// `sam2rt segment --multimask` (three candidates, the best kept, as the tools'
// SAM servers do) with only --json on stdout: the best mask, row-major 0/1.
std::vector<uint8_t> segment_mask(const std::vector<std::string>& prompt) {
  testing::ScratchDir scratch("labelling_reference");
  std::vector<std::string> args = {"segment", "--synthetic-weights", "0", "--config", micro_config(), "--image",
                                   chelsea(), "--multimask", "--json", "-", "--rle"};
  args.insert(args.end(), prompt.begin(), prompt.end());
  const testing::CliResult run = testing::run_cli(args, scratch);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const json report = json::parse(run.out);
  const json& best = report["masks"][report["best_index"].get<size_t>()]["segmentation"];
  return decode_rle(coco_rle_from_string(best["counts"], kHeight, kWidth));
}

const std::vector<std::string> kPointsPrompt = {"--point", "108,42", "--point", "252,84,0"};
const std::vector<std::string> kBoxPrompt = {"--box", "36,28,180,84"};

// Pixels whose centre lies inside (or on) any of the polygons: the even-odd rule,
// with points on an edge inside, as the polygons run through boundary pixel centres.
std::vector<uint8_t> rasterize(const std::vector<std::vector<std::array<double, 2>>>& polygons) {
  std::vector<uint8_t> mask(static_cast<size_t>(kWidth * kHeight), 0);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      for (const auto& polygon : polygons) {
        bool inside = false, on_edge = false;
        for (size_t i = 0, j = polygon.size() - 1; i < polygon.size(); j = i++) {
          const auto [xi, yi] = polygon[i];
          const auto [xj, yj] = polygon[j];
          const double cross = (xj - xi) * (y - yi) - (yj - yi) * (x - xi);
          if (std::abs(cross) < 1e-9 && x >= std::min(xi, xj) && x <= std::max(xi, xj) && y >= std::min(yi, yj) &&
              y <= std::max(yi, yj)) {
            on_edge = true;
          }
          if ((yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) inside = !inside;
        }
        if (inside || on_edge) mask[static_cast<size_t>(y * kWidth + x)] = 1;
      }
    }
  }
  return mask;
}

double iou(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int64_t both = 0, either = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    both += (a[i] && b[i]) ? 1 : 0;
    either += (a[i] || b[i]) ? 1 : 0;
  }
  return either == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(either);
}

int64_t area(const std::vector<uint8_t>& mask) {
  return std::count_if(mask.begin(), mask.end(), [](uint8_t v) { return v != 0; });
}

// [x0, y0, x1, y1] of the set pixels, inclusive (x1 = -1 when empty).
std::array<int, 4> extent(const std::vector<uint8_t>& mask) {
  std::array<int, 4> box = {kWidth, kHeight, -1, -1};
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      if (!mask[static_cast<size_t>(y * kWidth + x)]) continue;
      box = {std::min(box[0], x), std::min(box[1], y), std::max(box[2], x), std::max(box[3], y)};
    }
  }
  return box;
}

// A request whose headers promise `claimed_bytes` of body, of which only a little
// is sent: the answer must come before the body (httplib refuses by Content-Length).
std::pair<int, json> oversized_post(int port, const std::string& path, int64_t claimed_bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                           "Content-Length: " + std::to_string(claimed_bytes) + "\r\n\r\n" +
                           R"({"image": "data:image/png;base64,iVBORw0KGgo)";
  EXPECT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string answer;
  char buffer[4096];
  for (ssize_t got; (got = recv(fd, buffer, sizeof buffer, 0)) > 0;) {
    answer.append(buffer, static_cast<size_t>(got));
    const size_t body_at = answer.find("\r\n\r\n");
    if (body_at == std::string::npos) continue;
    const size_t length_at = answer.find("Content-Length: ");
    if (length_at != std::string::npos &&
        answer.size() >= body_at + 4 + std::stoul(answer.substr(length_at + 16))) {
      break;
    }
  }
  close(fd);
  const int status = answer.size() > 12 ? std::stoi(answer.substr(9, 3)) : 0;
  const size_t body_at = answer.find("\r\n\r\n");
  return {status, body_at == std::string::npos ? json() : json::parse(answer.substr(body_at + 4), nullptr, false)};
}

class LabellingProtocols : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--data-root", images_dir(), "--label-studio-basic-auth", kUser + ":" + kPassword, "--anylabeling-token",
        kToken});
  }
  static void TearDownTestSuite() { server_.reset(); }

  static httplib::Client label_studio() {
    httplib::Client client = server_->client();
    client.set_basic_auth(kUser, kPassword);
    return client;
  }
  static httplib::Headers token() { return {{"Token", kToken}}; }

  static json post_json(httplib::Client& client, const std::string& path, const std::string& body, int status,
                        const httplib::Headers& headers = {}) {
    const auto res = client.Post(path, headers, body, "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, status) << path << ": " << res->body.substr(0, 300);
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json; charset=utf-8") << path;
    return json::parse(res->body);
  }

  static json labelling_health() {
    const auto res = server_->client().Get("/healthz");
    EXPECT_TRUE(res && res->status == 200);
    return res ? json::parse(res->body) : json();
  }

  static std::unique_ptr<ServerProcess> server_;
};

std::unique_ptr<ServerProcess> LabellingProtocols::server_;

// ---- Label Studio ------------------------------------------------------------

void expect_label_studio_result_fields(const json& item, const std::string& type) {
  EXPECT_TRUE(item["id"].is_string() && !item["id"].get<std::string>().empty());
  EXPECT_EQ(item["from_name"], type == "brushlabels" ? "tag" : "outline");
  EXPECT_EQ(item["to_name"], "image");
  EXPECT_EQ(item["original_width"], kWidth);
  EXPECT_EQ(item["original_height"], kHeight);
  EXPECT_EQ(item["image_rotation"], 0);
  EXPECT_EQ(item["type"], type);
  EXPECT_EQ(item["readonly"], false);
  EXPECT_TRUE(item["score"].is_number());
  EXPECT_EQ(item["value"][type], json::array({"cat"}));
}

TEST_F(LabellingProtocols, LabelStudioHealthSetupWebhookAndMetricsAnswerAsTheMlBackendDoes) {
  auto client = label_studio();
  for (const std::string path : {"/health", "/label-studio/health", "/label-studio/", "/label-studio"}) {
    const auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    const json health = json::parse(res->body);
    EXPECT_EQ(health["status"], "UP") << path;
    EXPECT_TRUE(health["model_class"].is_string()) << path;
  }
  // GET / stays the page of serve.
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);

  for (const std::string prefix : {"", "/label-studio"}) {
    const json setup = post_json(client, prefix + "/setup", request("label_studio_setup.json"), 200);
    EXPECT_TRUE(setup["model_version"].is_string());
    EXPECT_EQ(setup.size(), 1u);
    EXPECT_EQ(post_json(client, prefix + "/webhook", request("label_studio_webhook.json"), 201), json::object());
    const auto metrics = client.Get(prefix + "/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_EQ(json::parse(metrics->body), json::object());
  }
}

TEST_F(LabellingProtocols, LabelStudioBrushRleOfKeypointsAndRectangleIsSegmentsMaskExactly) {
  auto client = label_studio();
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"label_studio_predict_keypoints.json", kPointsPrompt}, {"label_studio_predict_rectangle.json", kBoxPrompt}};
  for (const auto& [file, prompt] : cases) {
    const json answer = post_json(client, "/predict", request(file), 200);
    ASSERT_EQ(answer["results"].size(), 1u) << file;
    const json& prediction = answer["results"][0];
    EXPECT_EQ(prediction["model_version"], answer["model_version"]);
    EXPECT_TRUE(prediction["score"].is_number());
    ASSERT_EQ(prediction["result"].size(), 1u);
    const json& item = prediction["result"][0];
    expect_label_studio_result_fields(item, "brushlabels");
    EXPECT_EQ(item["value"]["format"], "rle");
    const std::vector<uint8_t> rle = item["value"]["rle"].get<std::vector<uint8_t>>();
    std::vector<uint8_t> decoded = testing::decode_brush_rle_mask(rle);
    const std::vector<uint8_t> expected = segment_mask(prompt);
    ASSERT_EQ(decoded.size(), expected.size());
    for (size_t i = 0; i < decoded.size(); ++i) ASSERT_EQ(decoded[i], expected[i] ? 255 : 0) << file << " pixel " << i;
    EXPECT_GT(area(expected), 0) << file;
    EXPECT_LT(area(expected), kWidth * kHeight) << file;
  }
}

TEST_F(LabellingProtocols, LabelStudioWithoutClicksPredictsNothing) {
  auto client = label_studio();
  json body = json::parse(request("label_studio_predict_keypoints.json"));
  body["params"]["context"] = nullptr;
  const json answer = post_json(client, "/predict", body.dump(), 200);
  EXPECT_EQ(answer["results"], json::array());
  EXPECT_TRUE(answer["model_version"].is_string());
}

TEST_F(LabellingProtocols, LabelStudioPolygonsInPercentCoverSegmentsMask) {
  ServerProcess polygons({"--data-root", images_dir(), "--label-studio-polygons"});
  auto client = polygons.client();
  const json answer = post_json(client, "/label-studio/predict", request("label_studio_predict_keypoints.json"), 200);
  const json& result = answer["results"][0]["result"];
  ASSERT_GE(result.size(), 1u);
  std::vector<std::vector<std::array<double, 2>>> outlines;
  for (const json& item : result) {
    expect_label_studio_result_fields(item, "polygonlabels");
    std::vector<std::array<double, 2>> outline;
    for (const json& point : item["value"]["points"]) {
      EXPECT_GE(point[0].get<double>(), 0.0);
      EXPECT_LE(point[0].get<double>(), 100.0);
      outline.push_back({point[0].get<double>() * kWidth / 100.0, point[1].get<double>() * kHeight / 100.0});
    }
    outlines.push_back(outline);
  }
  // Simplified by 0.5% of each outline's length, as Label Studio's SAM 2 example does.
  EXPECT_GE(iou(rasterize(outlines), segment_mask(kPointsPrompt)), 0.99);
}

TEST(LabellingHttpImages, LabelStudioFetchesHttpImagesWithTheFlagWithinTheSizeLimit) {
  httplib::Server images;
  const std::string png = read_bytes(chelsea());
  images.Get("/chelsea.png", [&png](const httplib::Request&, httplib::Response& res) {
    res.set_content(png, "image/png");
  });
  images.Get("/big.png", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(2 * 1024 * 1024, 'x'), "image/png");
  });
  images.Get("/big-chunked.png", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("image/png", [](size_t offset, httplib::DataSink& sink) {
      if (offset >= 3u * 1024 * 1024) {
        sink.done();
        return true;
      }
      const std::string block(64 * 1024, 'x');
      return sink.write(block.data(), block.size());
    });
  });
  const int port = images.bind_to_any_port("127.0.0.1");
  std::thread listening([&images] { images.listen_after_bind(); });
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  ServerProcess server({"--label-studio-allow-http", "--max-upload-mb", "1"});
  auto client = server.client();
  json body = json::parse(request("label_studio_predict_keypoints.json"));
  auto predict = [&](const std::string& url, int status) {
    body["tasks"][0]["data"]["image"] = url;
    const auto res = client.Post("/predict", body.dump(), "application/json");
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, status) << url << ": " << res->body.substr(0, 200);
    return json::parse(res->body);
  };
  const json answer = predict(base + "/chelsea.png?token=not-for-logs", 200);
  const std::vector<uint8_t> rle = answer["results"][0]["result"][0]["value"]["rle"].get<std::vector<uint8_t>>();
  const std::vector<uint8_t> decoded = testing::decode_brush_rle_mask(rle);
  const std::vector<uint8_t> expected = segment_mask(kPointsPrompt);
  ASSERT_EQ(decoded.size(), expected.size());
  for (size_t i = 0; i < decoded.size(); ++i) ASSERT_EQ(decoded[i], expected[i] ? 255 : 0) << i;

  EXPECT_EQ(predict(base + "/big.png", 413)["status"], 413);
  EXPECT_EQ(predict(base + "/big-chunked.png", 413)["status"], 413);
  const json missing = predict(base + "/missing.png?token=not-for-logs", 400);
  EXPECT_NE(missing["detail"].get<std::string>().find("HTTP 404"), std::string::npos) << missing;
  EXPECT_EQ(missing.dump().find("not-for-logs"), std::string::npos) << missing;
  EXPECT_EQ(predict("ftp://127.0.0.1/chelsea.png", 400)["status"], 400);
  EXPECT_TRUE(server.alive());
  images.stop();
  listening.join();
}

// ---- X-AnyLabeling ---------------------------------------------------------------

void expect_anylabeling_shape_fields(const json& shape, const std::string& type) {
  EXPECT_EQ(shape["label"], "AUTOLABEL_OBJECT");
  EXPECT_EQ(shape["shape_type"], type);
  EXPECT_GE(shape["score"].get<double>(), 0.0);
  EXPECT_LE(shape["score"].get<double>(), 1.0);
  EXPECT_EQ(shape["attributes"], json::object());
  EXPECT_TRUE(shape["description"].is_null());
  EXPECT_EQ(shape["difficult"], false);
  EXPECT_EQ(shape["direction"], 0);
  EXPECT_TRUE(shape["flags"].is_null());
  EXPECT_TRUE(shape["group_id"].is_null());
  EXPECT_EQ(shape["kie_linking"], json::array());
  for (const json& point : shape["points"]) EXPECT_EQ(point.size(), 2u);
}

TEST_F(LabellingProtocols, AnyLabelingListsItsModelsAsTheClientReadsThem) {
  auto client = server_->client();
  const auto health = client.Get("/anylabeling/health");  // no token needed
  ASSERT_TRUE(health);
  const json status = json::parse(health->body);
  EXPECT_EQ(status["status"], "healthy");
  EXPECT_EQ(status["models_loaded"], 2);
  EXPECT_EQ(status["timestamp"].get<std::string>().size(), 20u);  // 2026-01-05T10:00:00Z

  const auto models = client.Get("/anylabeling/v1/models", token());
  ASSERT_TRUE(models);
  const json list = json::parse(models->body);
  EXPECT_EQ(list["success"], true);
  ASSERT_EQ(list["data"].size(), 2u);
  for (const auto& [id, info] : list["data"].items()) {
    EXPECT_TRUE(info["display_name"].is_string());
    EXPECT_TRUE(info["widgets"].is_array());
    EXPECT_TRUE(info["params"].is_object());
    const auto one = client.Get("/anylabeling/v1/models/" + id + "/info", token());
    ASSERT_TRUE(one);
    const json details = json::parse(one->body);
    EXPECT_EQ(details["success"], true);
    EXPECT_EQ(details["data"]["model_id"], id);
    EXPECT_EQ(details["data"]["display_name"], info["display_name"]);
  }
}

TEST_F(LabellingProtocols, AnyLabelingPolygonsAndRectangleMatchSegmentsMask) {
  auto client = server_->client();
  const json points = post_json(client, "/anylabeling/v1/predict", request("anylabeling_predict_points.json"), 200,
                                token());
  EXPECT_EQ(points["success"], true);
  EXPECT_EQ(points["data"]["description"], "");
  std::vector<std::vector<std::array<double, 2>>> outlines;
  for (const json& shape : points["data"]["shapes"]) {
    expect_anylabeling_shape_fields(shape, "polygon");
    outlines.push_back(shape["points"].get<std::vector<std::array<double, 2>>>());
  }
  ASSERT_FALSE(outlines.empty());
  EXPECT_GE(iou(rasterize(outlines), segment_mask(kPointsPrompt)), 0.99);

  const json box = post_json(client, "/anylabeling/v1/predict", request("anylabeling_predict_rectangle.json"), 200,
                             token());
  ASSERT_EQ(box["data"]["shapes"].size(), 1u);
  const json& rectangle = box["data"]["shapes"][0];
  expect_anylabeling_shape_fields(rectangle, "rectangle");
  const auto [x0, y0, x1, y1] = extent(segment_mask(kBoxPrompt));
  // cv2.boundingRect's corners: the end is one past the last pixel.
  EXPECT_EQ(rectangle["points"], json::array({{x0, y0}, {x1 + 1, y0}, {x1 + 1, y1 + 1}, {x0, y1 + 1}}));
}

TEST_F(LabellingProtocols, AnyLabelingEncodesAnImageOnceWhateverTheMarks) {
  ServerProcess fresh({"--anylabeling-token", kToken});
  auto client = fresh.client();
  json body = json::parse(request("anylabeling_predict_points.json"));
  for (int click = 0; click < 5; ++click) {
    body["params"]["marks"] = json::array({{{"type", "point"}, {"data", {20 + 40 * click, 30}}, {"label", 1}}});
    post_json(client, "/anylabeling/v1/predict", body.dump(), 200, token());
  }
  const auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body)["labelling_encodes"], 1);
}

// ---- CVAT --------------------------------------------------------------------------

TEST_F(LabellingProtocols, CvatInteractorAnswersSegmentsMaskAndItsBounds) {
  auto client = server_->client();
  for (const std::string path : {"/cvat", "/cvat/"}) {
    const json answer = post_json(client, path, request("cvat_interactor.json"), 200);
    const std::vector<uint8_t> expected = segment_mask(kPointsPrompt);
    ASSERT_EQ(answer["mask"].size(), static_cast<size_t>(kHeight));
    for (int y = 0; y < kHeight; ++y) {
      ASSERT_EQ(answer["mask"][y].size(), static_cast<size_t>(kWidth));
      for (int x = 0; x < kWidth; ++x) {
        ASSERT_EQ(answer["mask"][y][x], expected[static_cast<size_t>(y * kWidth + x)] ? 255 : 0) << x << "," << y;
      }
    }
    const auto box = extent(expected);
    EXPECT_EQ(answer["bounds"], json(box));
  }
}

TEST_F(LabellingProtocols, CvatFeaturesAreThePredictorsDecoderFeatures) {
  auto client = server_->client();
  const json answer = post_json(client, "/cvat/features", request("cvat_interactor.json"), 200);
  ModelSource source;
  source.synthetic_salt = 0;
  source.config_path = micro_config();
  Predictor predictor(Sam2Model::load(source));
  predictor.set_image(decode_image_file(chelsea()));
  const DecoderFeatures& features = predictor.features();
  const std::pair<std::string, const Tensor*> parts[] = {
      {"blob", &features.image_embed}, {"high_res_feats_0", &features.feat_s0}, {"high_res_feats_1", &features.feat_s1}};
  for (const auto& [name, tensor] : parts) {
    EXPECT_EQ(answer["shapes"][name], json(tensor->shape())) << name;
    // The float32 values, little-endian, as base64.
    const std::string bytes = base64_decode(answer[name].get<std::string>(), name);
    ASSERT_EQ(bytes.size(), static_cast<size_t>(tensor->numel()) * sizeof(float)) << name;
    EXPECT_EQ(std::memcmp(bytes.data(), tensor->data(), bytes.size()), 0) << name;
  }
  EXPECT_EQ(answer["original_size"], json::array({kHeight, kWidth}));
}

// ---- Bad input ------------------------------------------------------------------------

TEST_F(LabellingProtocols, BadInputGetsA4xxInEachProtocolsShapeAndLeaksNothing) {
  auto label_studio_client = label_studio();
  auto client = server_->client();
  httplib::Client wrong_password = server_->client();
  wrong_password.set_basic_auth(kUser, "guess");

  json keypoints = json::parse(request("label_studio_predict_keypoints.json"));
  json outside = keypoints;
  outside["params"]["context"]["result"][0]["value"]["x"] = 150.0;
  json escape = keypoints;
  escape["tasks"][0]["data"]["image"] = "/data/local-files/?d=..%2Fmicro%2Fmicro.pt";
  json absolute = keypoints;
  absolute["tasks"][0]["data"]["image"] = "/etc/passwd";
  json remote = keypoints;
  remote["tasks"][0]["data"]["image"] = "http://example.com/cat.png";
  json no_tasks = keypoints;
  no_tasks.erase("tasks");

  json points = json::parse(request("anylabeling_predict_points.json"));
  json al_outside = points;
  al_outside["params"]["marks"][0]["data"] = {1000, 42};
  json al_no_image = points;
  al_no_image.erase("image");
  json al_bad_label = points;
  al_bad_label["params"]["marks"][0]["label"] = 2;
  json al_unknown_model = points;
  al_unknown_model["model"] = "yolo11n";
  json al_not_base64 = points;
  al_not_base64["image"] = "data:image/png;base64,@@@@";

  json cvat = json::parse(request("cvat_interactor.json"));
  json cvat_outside = cvat;
  cvat_outside["pos_points"] = {{300, 10}};
  json cvat_no_points = cvat;
  cvat_no_points.erase("pos_points");
  json cvat_not_image = cvat;
  cvat_not_image["image"] = "aGVsbG8=";

  enum class Shape { label_studio, anylabeling, cvat };
  struct Case {
    httplib::Client* client;
    std::string path;
    std::string body;
    httplib::Headers headers;
    int status;
    Shape shape;
  };
  const std::vector<Case> cases = {
      {&label_studio_client, "/predict", outside.dump(), {}, 400, Shape::label_studio},
      {&label_studio_client, "/predict", escape.dump(), {}, 403, Shape::label_studio},
      {&label_studio_client, "/predict", absolute.dump(), {}, 404, Shape::label_studio},
      {&label_studio_client, "/predict", remote.dump(), {}, 400, Shape::label_studio},
      {&label_studio_client, "/predict", no_tasks.dump(), {}, 400, Shape::label_studio},
      {&label_studio_client, "/label-studio/predict", "{", {}, 400, Shape::label_studio},
      {&wrong_password, "/predict", keypoints.dump(), {}, 401, Shape::label_studio},
      {&client, "/label-studio/setup", "{}", {}, 401, Shape::label_studio},
      {&client, "/anylabeling/v1/predict", al_outside.dump(), token(), 400, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", al_no_image.dump(), token(), 400, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", al_bad_label.dump(), token(), 400, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", al_unknown_model.dump(), token(), 404, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", al_not_base64.dump(), token(), 400, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", points.dump(), {{"Token", "wrong"}}, 401, Shape::anylabeling},
      {&client, "/anylabeling/v1/predict", points.dump(), {}, 401, Shape::anylabeling},
      {&client, "/anylabeling/v1/video/init", "{}", token(), 501, Shape::anylabeling},
      {&client, "/anylabeling/v1/no-such-route", "{}", token(), 404, Shape::anylabeling},
      {&client, "/cvat", cvat_outside.dump(), {}, 400, Shape::cvat},
      {&client, "/cvat", cvat_no_points.dump(), {}, 400, Shape::cvat},
      {&client, "/cvat", cvat_not_image.dump(), {}, 400, Shape::cvat},
      {&client, "/cvat/features", "[]", {}, 400, Shape::cvat},
  };
  for (const Case& c : cases) {
    const json error = post_json(*c.client, c.path, c.body, c.status, c.headers);
    const std::string text = error.dump();
    switch (c.shape) {
      case Shape::label_studio:
        EXPECT_EQ(error["status"], c.status) << c.path;
        EXPECT_TRUE(error["detail"].is_string()) << c.path;
        break;
      case Shape::anylabeling:
        EXPECT_EQ(error["success"], false) << c.path;
        EXPECT_TRUE(error["error"]["code"].is_string()) << c.path;
        EXPECT_TRUE(error["error"]["message"].is_string()) << c.path;
        break;
      case Shape::cvat: EXPECT_TRUE(error["error"].is_string()) << c.path; break;
    }
    // Nothing of the server's files: neither where they are nor what they hold.
    EXPECT_EQ(text.find(fixtures_dir()), std::string::npos) << text;
    EXPECT_EQ(text.find("root:"), std::string::npos) << text;
  }

  // 2 GB promised in Content-Length: refused from the headers, in each protocol's shape.
  const int64_t two_gb = int64_t{2} << 30;
  const auto [ls_status, ls_error] = oversized_post(server_->port(), "/predict", two_gb);
  EXPECT_EQ(ls_status, 413);
  EXPECT_EQ(ls_error["status"], 413);
  const auto [al_status, al_error] = oversized_post(server_->port(), "/anylabeling/v1/predict", two_gb);
  EXPECT_EQ(al_status, 413);
  EXPECT_EQ(al_error["success"], false);
  const auto [cvat_status, cvat_error] = oversized_post(server_->port(), "/cvat/", two_gb);
  EXPECT_EQ(cvat_status, 413);
  EXPECT_TRUE(cvat_error["error"].is_string());

  EXPECT_TRUE(server_->alive());
  EXPECT_EQ(labelling_health()["status"], "ok");
}

// ---- Concurrency --------------------------------------------------------------------

TEST(LabellingConcurrency, TwoHundredAnyLabelingPredictsOnFourImagesEncodeEachOnce) {
  ServerProcess server;
  const std::vector<std::string> images = {chelsea(), images_dir() + "/chelsea.png", images_dir() + "/coffee.png",
                                           images_dir() + "/astronaut.png"};
  std::vector<std::string> bodies;
  for (size_t i = 0; i < 200; ++i) {
    json body = json::parse(request("anylabeling_predict_points.json", images[i % images.size()]));
    body["params"]["marks"] = json::array({{{"type", "point"}, {"data", {10 + static_cast<int>(i % 50), 20}}, {"label", 1}}});
    bodies.push_back(body.dump());
  }
  std::vector<double> milliseconds(bodies.size(), 0.0);
  std::atomic<int> errors{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> clients;
  for (size_t i = 0; i < bodies.size(); ++i) {
    clients.emplace_back([&, i] {
      httplib::Client client = server.client();
      client.set_read_timeout(300, 0);
      ++ready;
      while (ready < static_cast<int>(bodies.size())) std::this_thread::yield();
      const auto start = std::chrono::steady_clock::now();
      const auto res = client.Post("/anylabeling/v1/predict", bodies[i], "application/json");
      milliseconds[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!res || res->status != 200 || json::parse(res->body)["success"] != true) {
        ++errors;
        std::fprintf(stderr, "request %zu: %s\n", i,
                     res ? (std::to_string(res->status) + " " + res->body.substr(0, 200)).c_str()
                         : httplib::to_string(res.error()).c_str());
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(errors, 0);
  std::sort(milliseconds.begin(), milliseconds.end());
  const double p50 = milliseconds[milliseconds.size() / 2];
  const double p99 = milliseconds[static_cast<size_t>(std::ceil(0.99 * static_cast<double>(milliseconds.size()))) - 1];
  std::printf("200 concurrent X-AnyLabeling predicts on 4 images: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", p50, p99,
              milliseconds.back());
  ::testing::Test::RecordProperty("p99_ms", std::to_string(p99));
  const auto health = server.client().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body)["labelling_encodes"], 4);
}

}  // namespace
}  // namespace sam2rt
