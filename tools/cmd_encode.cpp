#include <chrono>
#include <filesystem>
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
  bool all_features = false;
  bool pos_enc = false;
  std::string feature_dtype = feature_dtype_name(StoredDtype::f32);

  void run() const {
    require_writable(out_path, "--out");
    auto loaded = model.load();
    const RgbImage image = decode_image_file(image_path, model.max_image_pixels);
    Predictor predictor(loaded);
    const auto start = std::chrono::steady_clock::now();
    const Precision precision = model.encoder_precision();
    predictor.set_image(image, EncodeOptions{.position_encodings = pos_enc, .precision = precision});
    const double encode_ms = milliseconds_since(start);
    write_feature_file(out_path, predictor.encoder_outputs(), identify_model(loaded->config(), loaded->weights()),
                       model.source().describe(loaded->config()),
                       image.width, image.height,
                       FeatureFileOptions{.all_features = all_features,
                                          .position_encodings = pos_enc,
                                          .precision = precision,
                                          .dtype = parse_feature_dtype(feature_dtype)});
    const double mib = static_cast<double>(std::filesystem::file_size(out_path)) / (1024.0 * 1024.0);
    std::printf("encoded %s (%dx%d) in %.0f ms -> %s (%.1f MiB, %s)\n", image_path.c_str(), image.width, image.height,
                encode_ms, out_path.c_str(), mib, feature_dtype.c_str());
  }
};

}  // namespace

void register_encode(CLI::App& app) {
  auto command = std::make_shared<EncodeCommand>();
  CLI::App* sub = app.add_subcommand(
      "encode",
      "Run the image encoder (Hiera trunk + FPN neck) on a photo and write the features `segment --features` "
      "needs (image_embed, feat_s1, feat_s0; NCHW) to a .safetensors file. Its metadata records the model (variant, "
      "config hash, weights fingerprint), the preprocessing, the --precision and the photo's size.");
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->required()->check(CLI::ExistingFile);
  sub->add_option("--out", command->out_path, "output features, .safetensors")->required();
  // Older scripts (and main's dask driver) pass --decoder-ready: accepted, and what encode now always writes.
  sub->add_flag("--decoder-ready")
      ->description("the default: image_embed, feat_s1, feat_s0 are always written (accepted for older scripts)");
  sub->add_flag("--all-features", command->all_features,
                "also write the neck's outputs neck.level0..2 (image_embed is level2 + no_mem_embed)");
  sub->add_option("--feature-dtype", command->feature_dtype,
                  "how the features are stored: float32 (exact), bfloat16 or float16 (half the size; "
                  "segment widens them back to float32, masks may differ slightly)")
      ->default_val(feature_dtype_name(StoredDtype::f32))
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  sub->add_flag("--pos-enc", command->pos_enc, "also write the sine position encodings neck.pos0..2");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
