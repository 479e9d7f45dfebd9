#include <chrono>
#include <cstdio>
#include <memory>

#include "api/feature_file.h"
#include "api/predictor.h"
#include "commands.h"
#include "model_options.h"
#include "staged_outputs.h"

namespace sam2rt::cli {

namespace {

struct EncodeCommand {
  ModelOptions model;
  std::string image_path;
  std::string out_path;
  bool decoder_ready = false;
  bool pos_enc = false;

  void run() const {
    require_writable(out_path, "--out");
    auto loaded = model.load();
    const RgbImage image = decode_image_file(image_path, model.max_image_pixels);
    Predictor predictor(loaded);
    const auto start = std::chrono::steady_clock::now();
    const Precision precision = model.encoder_precision();
    predictor.set_image(image, EncodeOptions{.position_encodings = pos_enc, .precision = precision});
    const double encode_ms = milliseconds_since(start);
    write_feature_file(out_path, predictor.encoder_outputs(), loaded->config(), model.source().describe(),
                       image.width, image.height,
                       FeatureFileOptions{
                           .decoder_ready = decoder_ready, .position_encodings = pos_enc, .precision = precision});
    std::printf("encoded %s (%dx%d) in %.0f ms -> %s\n", image_path.c_str(), image.width, image.height, encode_ms,
                out_path.c_str());
  }
};

}  // namespace

void register_encode(CLI::App& app) {
  auto command = std::make_shared<EncodeCommand>();
  CLI::App* sub = app.add_subcommand(
      "encode",
      "Run the image encoder (Hiera trunk + FPN neck) on a photo and write its features to a .safetensors file "
      "(float32 NCHW: neck.level0..2; with --decoder-ready also image_embed, feat_s1, feat_s0 for `segment "
      "--features`). The file's metadata records the --precision it was encoded with.");
  command->model.add_to(*sub);
  sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->required()->check(CLI::ExistingFile);
  sub->add_option("--out", command->out_path, "output features, .safetensors")->required();
  sub->add_flag("--decoder-ready", command->decoder_ready,
                "also write image_embed (= level2 + no_mem_embed), feat_s1 and feat_s0");
  sub->add_flag("--pos-enc", command->pos_enc, "also write the sine position encodings neck.pos0..2");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
