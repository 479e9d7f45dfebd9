#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "api/feature_encoder.h"
#include "batch_job.h"
#include "commands.h"
#include "core/error.h"
#include "model_options.h"
#include "photo_input.h"
#include "staged_outputs.h"

namespace sam2rt::cli {

namespace {

struct EncodeCommand {
  ModelOptions model;
  BatchOptions batch;
  std::string image_path;
  std::string out_path;
  std::string out_dir;
  bool all_features = false;
  bool pos_enc = false;
  std::string feature_dtype = feature_dtype_name(StoredDtype::f32);

  FeatureEncoder load_encoder() const {
    auto loaded = model.load();
    const std::string description = model.source().describe(loaded->config());
    return FeatureEncoder(loaded, description,
                          FeatureFileOptions{.all_features = all_features,
                                             .position_encodings = pos_enc,
                                             .precision = model.encoder_precision(),
                                             .device_precision = model.device_precision(),
                                             .dtype = parse_feature_dtype(feature_dtype)});
  }

  void run() {
    if (batch.active()) return run_batch_mode();
    if (image_path.empty() || out_path.empty()) {
      throw Error("give --image and --out (one photo) or --input-dir/--input-list and --out-dir (a batch)");
    }
    if (!out_dir.empty()) throw Error("--out-dir is for batch mode (--input-dir/--input-list); one photo: --out");
    require_writable(out_path, "--out");
    const FeatureEncoder encoder = load_encoder();
    const RgbImage image = read_photo(image_path, model.max_image_pixels);
    const auto start = std::chrono::steady_clock::now();
    const EncodedImage encoded = encoder.encode(encoder.prepare(image));
    const double encode_ms = milliseconds_since(start);
    encoder.write(out_path, encoded);
    const double mib = static_cast<double>(std::filesystem::file_size(out_path)) / (1024.0 * 1024.0);
    std::printf("encoded %s (%dx%d) in %.0f ms -> %s (%.1f MiB, %s)\n", image_path.c_str(), image.width, image.height,
                encode_ms, out_path.c_str(), mib, feature_dtype.c_str());
  }

  // One features file per image, the bytes `encode --image X --out Y` writes: decoding
  // and preprocessing the next image and writing the last file overlap the encoder.
  void run_batch_mode() {
    if (!out_path.empty()) throw Error("batch mode writes one file per image into --out-dir; --out is for one --image");
    batch.out_dir = out_dir;
    const std::vector<BatchItem> items = batch.items(".safetensors");
    const FeatureEncoder encoder = load_encoder();
    const int failed = run_batch(batch, items, [&](const BatchItem& item) -> BatchCompute {
      return [&encoder, image = encoder.prepare(decode_image_file(item.input, model.max_image_pixels)),
              output = item.output]() -> BatchWrite {
        return [&encoder, encoded = encoder.encode(image), output] { encoder.write(output, encoded); };
      };
    });
    if (failed > 0) throw CLI::RuntimeError(1);
  }
};

}  // namespace

void register_encode(CLI::App& app) {
  auto command = std::make_shared<EncodeCommand>();
  CLI::App* sub = app.add_subcommand(
      "encode",
      "Encode photos into features that `segment --features` reuses.\n"
      "Run the image encoder (Hiera trunk + FPN neck) on a photo and write the features `segment --features` "
      "needs (image_embed, feat_s1, feat_s0; NCHW) to a .safetensors file. Its metadata records the model (variant, "
      "config hash, weights fingerprint), the preprocessing, the --precision and the photo's size. Batch mode "
      "(--input-dir/--input-list, --out-dir) writes one such file per photo.");
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  auto* image = sub->add_option("--image", command->image_path, "input photo (PNG or JPEG)")->check(CLI::ExistingFile);
  command->batch.add_to(*sub, image);
  sub->add_option("--out", command->out_path, "output features, .safetensors");
  sub->add_option("--out-dir", command->out_dir,
                  "batch mode: folder for one .safetensors per image (named after the input) and manifest.jsonl");
  // Older scripts pass --decoder-ready: accepted, and what encode now always writes.
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
