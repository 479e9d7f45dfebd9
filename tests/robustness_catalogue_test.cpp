// The catalogue of bad inputs (docs/ROBUSTNESS.md): each case runs the sam2rt
// binary on one hostile or broken input and checks that it fails safe: exit
// code, exactly one final line "sam2rt: error: ..." naming the problem, no
// crash or hang, and every output file of an earlier run left untouched (no
// temporary left behind either).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <span>

#include "cli_runner.h"
#include "io/png_writer.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/prompt.h"
#include "model/synthetic_weights.h"
#include "model/weight_manifest.h"
#include "test_image_writer.h"
#include "test_zip_builder.h"

namespace sam2rt::testing {
namespace {

constexpr int kRunTimeoutSeconds = 120;
constexpr int kRuntimeError = 1;
constexpr int kUsageError = 2;

std::string micro_pt() { return fixtures_dir() + "/micro/micro.pt"; }
std::string micro_yaml() { return fixtures_dir() + "/micro/sam2.1_micro.yaml"; }
std::string micro_image() { return fixtures_dir() + "/images/chelsea_288x112.png"; }

void write_text(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}
void write_bytes(const std::string& path, const Bytes& bytes) {
  write_text(path, std::string(bytes.begin(), bytes.end()));
}

uint32_t le32_at(const std::string& bytes, size_t pos) {
  uint32_t v = 0;
  std::memcpy(&v, bytes.data() + pos, 4);
  return v;
}

// ---------------------------------------------------------------------------
// Builders of broken inputs

// The pickle of torch.save({"model": {"w": tensor}}) with one [2, 3] float
// tensor over storage "0", as torch writes it (protocol 2).
Bytes one_tensor_pickle(uint8_t storage_numel, uint8_t offset) {
  using namespace std::string_literals;
  std::string p = "\x80\x02}X\x05\x00\x00\x00model"s + "ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00w"s;
  p += "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"s + "ctorch\nFloatStorage\n";
  p += "X\x01\x00\x00\x00"s + "0" + "X\x03\x00\x00\x00"s + "cpu";
  p += "K"s + static_cast<char>(storage_numel) + "tQ";
  p += "K"s + static_cast<char>(offset) + "(K\x02K\x03t(K\x03K\x01t\x89";
  p += "ccollections\nOrderedDict\n)RtRus.";
  return to_bytes(p);
}

Bytes six_floats() {
  Bytes b(24);
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(b.data(), values, 24);
  return b;
}

ZipBuilder checkpoint_zip(const Bytes& pickle) {
  ZipBuilder zip;
  zip.add("x/data.pkl", pickle);
  zip.add("x/data/0", six_floats());
  zip.add("x/version", to_bytes("3\n"));
  return zip;
}

Bytes safetensors_file(const std::string& header, const Bytes& data, uint64_t declared_length) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(declared_length >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}
Bytes safetensors_file(const std::string& header, const Bytes& data) {
  return safetensors_file(header, data, header.size());
}

// The micro model's weights (exactly micro.pt) with one change applied.
std::string micro_weights_with(const ScratchDir& s, const std::function<void(NamedTensors&)>& change) {
  NamedTensors tensors;
  for (const auto& spec : image_path_weights(load_config_yaml(micro_yaml()))) {
    tensors.emplace_back(spec.key, generate_weight(spec.key, spec.shape, 0));
  }
  change(tensors);
  const std::string path = s.file("weights.safetensors");
  write_safetensors(path, tensors, {});
  return path;
}

Tensor& weight(NamedTensors& tensors, const std::string& key) {
  for (auto& [name, tensor] : tensors) {
    if (name == key) return tensor;
  }
  throw std::runtime_error("no weight " + key);
}

std::string micro_yaml_with(const ScratchDir& s, const std::string& from, const std::string& to) {
  std::string yaml = read_text(micro_yaml());
  const size_t at = yaml.find(from);
  if (at == std::string::npos) throw std::runtime_error("micro yaml has no '" + from + "'");
  yaml.replace(at, from.size(), to);
  const std::string path = s.file("config.yaml");
  write_text(path, yaml);
  return path;
}

// Noise, so that the compressed data is long enough to cut in the middle.
std::vector<uint8_t> noise_rgb(int width, int height) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  uint32_t state = 12345;
  for (uint8_t& v : rgb) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(state >> 24);
  }
  return rgb;
}

Bytes noise_png(int width, int height) { return encode_png_rgb8(noise_rgb(width, height).data(), width, height); }

// Quality 75, libjpeg's default.
Bytes noise_jpeg(int width, int height) {
  JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.quality = 75;
  spec.pixels = noise_rgb(width, height);
  return encode_test_jpeg(spec);
}

// ---------------------------------------------------------------------------
// Command lines

// Every output a run can write; each exists (from an "earlier run") before the
// case runs and must be byte-for-byte the same afterwards.
const char* const kOutputs[] = {"out.png", "overlay.png", "result.json", "logits.safetensors", "features.safetensors"};
const std::string kEarlierRun = "an earlier run's output";

struct Segment {
  std::string model = micro_pt();
  std::string config = micro_yaml();
  std::string image = micro_image();
  std::vector<std::string> prompt = {"--point", "110,41"};
  std::string out = "out.png";
  std::string overlay = "overlay.png";
  std::string json = "result.json";
  std::string logits = "logits.safetensors";
  std::vector<std::string> extra;

  std::vector<std::string> args(const ScratchDir& s) const {
    std::vector<std::string> a = {"segment", "--model", model, "--config", config, "--image", image,
                                  "--out",   s.file(out), "--overlay", s.file(overlay), "--json", s.file(json),
                                  "--logits", s.file(logits)};
    a.insert(a.end(), prompt.begin(), prompt.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

std::vector<std::string> encode_args(const ScratchDir& s, const std::string& model, const std::string& config,
                                     const std::string& image, const std::string& out = "features.safetensors") {
  return {"encode", "--model", model, "--config", config, "--image", image, "--out", s.file(out)};
}

// Writes a broken model file and returns the segment command that loads it.
std::vector<std::string> segment_with_model(const ScratchDir& s, const std::string& name, const Bytes& bytes) {
  write_bytes(s.file(name), bytes);
  Segment run;
  run.model = s.file(name);
  return run.args(s);
}

std::vector<std::string> segment_with_image(const ScratchDir& s, const std::string& name, const Bytes& bytes) {
  write_bytes(s.file(name), bytes);
  Segment run;
  run.image = s.file(name);
  return run.args(s);
}

std::vector<std::string> segment_with_prompt(const ScratchDir& s, std::vector<std::string> prompt) {
  Segment run;
  run.prompt = std::move(prompt);
  return run.args(s);
}

std::vector<std::string> segment_with_prompts_file(const ScratchDir& s, const std::string& text) {
  write_text(s.file("prompts.json"), text);
  return segment_with_prompt(s, {"--prompts", s.file("prompts.json")});
}

// Adds flags to the usual one-click run.
std::vector<std::string> segment_with_extra(const ScratchDir& s, std::vector<std::string> extra) {
  Segment run;
  run.extra = std::move(extra);
  return run.args(s);
}

Bytes micro_pt_bytes() {
  static const std::string bytes = read_text(micro_pt());
  return to_bytes(bytes);
}

// micro.pt with the byte at `pos` XOR-ed with `mask`.
Bytes micro_pt_flipped(size_t pos, uint8_t mask) {
  Bytes b = micro_pt_bytes();
  b.at(pos) ^= mask;
  return b;
}

// Where data.pkl's bytes start in micro.pt (its first record).
size_t micro_pickle_data_offset() {
  const std::string b = read_text(micro_pt());
  const uint16_t name_len = static_cast<uint16_t>(b[26] & 0xff) | static_cast<uint16_t>((b[27] & 0xff) << 8);
  const uint16_t extra_len = static_cast<uint16_t>(b[28] & 0xff) | static_cast<uint16_t>((b[29] & 0xff) << 8);
  return 30u + name_len + extra_len;
}

size_t micro_central_directory_offset() {
  const std::string b = read_text(micro_pt());
  return le32_at(b, b.size() - 22 + 16);
}

// torch.save writes ZIP64 end records, whose directory offset is the one that counts.
size_t micro_zip64_directory_offset_field() {
  const std::string b = read_text(micro_pt());
  const size_t locator = b.size() - 22 - 20;
  if (le32_at(b, locator) != 0x07064b50) throw std::runtime_error("micro.pt has no ZIP64 locator");
  return le32_at(b, locator + 8) + 48;
}

// Where the float32 data of an image-path weight lies in micro.pt, found by
// its values (micro.pt holds exactly the salt-0 synthetic weights).
size_t micro_weight_offset(const std::string& key) {
  for (const auto& spec : image_path_weights(load_config_yaml(micro_yaml()))) {
    if (spec.key != key) continue;
    const Tensor w = generate_weight(spec.key, spec.shape, 0);
    const std::string b = read_text(micro_pt());
    const size_t at = b.find(std::string(reinterpret_cast<const char*>(w.data()), static_cast<size_t>(w.numel()) * 4));
    if (at == std::string::npos) throw std::runtime_error("micro.pt does not hold " + key);
    return at;
  }
  throw std::runtime_error("no weight " + key);
}

// Rewrites the CRC-32 in the central directory entry of the record whose data
// contains byte `at`, as a careful forger would.
void fix_crc_of_record_containing(Bytes& b, size_t at) {
  const ZipArchive zip(std::span<const uint8_t>(b.data(), b.size()), "micro.pt");
  const std::string text(b.begin(), b.end());
  for (const ZipEntry& entry : zip.entries()) {
    if (at < entry.data_offset || at >= entry.data_offset + entry.size) continue;
    const uint32_t crc = zip_crc32(zip.data(entry));
    // The central directory header of this entry: signature, then its name at +46.
    for (size_t pos = micro_central_directory_offset(); pos + 46 < b.size(); ++pos) {
      if (le32_at(text, pos) == 0x02014b50 && text.compare(pos + 46, entry.name.size(), entry.name) == 0 &&
          static_cast<size_t>((b[pos + 28] | (b[pos + 29] << 8))) == entry.name.size()) {
        std::memcpy(&b[pos + 16], &crc, 4);
        return;
      }
    }
  }
  throw std::runtime_error("no record holds that byte");
}

// ---------------------------------------------------------------------------
// The catalogue

struct Case {
  std::string name;
  std::function<std::vector<std::string>(const ScratchDir&)> command;
  std::string fragment;  // the error must contain it
  int exit_code = kRuntimeError;
};

// gtest prints the case by name when it fails.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> catalogue() {
  std::vector<Case> c;
  // The cases read micro.pt when they run: a copy captured in each of them was
  // copied again and again by gtest's registration, in every test process
  // (39% of an ASan process's start, ~0.16 s).
  const size_t micro_size = static_cast<size_t>(std::filesystem::file_size(micro_pt()));

  // --- torch.save checkpoints (.pt) ---
  c.push_back({"EmptyCheckpoint", [](const ScratchDir& s) { return segment_with_model(s, "empty.pt", {}); },
               "is empty"});
  const std::pair<size_t, std::string> cuts[] = {{3, "3Bytes"},
                                                 {30, "30Bytes"},
                                                 {4096, "4KiB"},
                                                 {micro_size / 2, "Half"},
                                                 {micro_size - 23, "BeforeEndRecord"},
                                                 {micro_size - 1, "ByOneByte"}};
  for (const auto& [keep, label] : cuts) {
    c.push_back({"CheckpointTruncated" + label,
                 [keep](const ScratchDir& s) {
                   const Bytes micro = micro_pt_bytes();
                   return segment_with_model(s, "cut.pt", Bytes(micro.begin(), micro.begin() + keep));
                 },
                 keep < 4 ? "neither a torch.save checkpoint nor a safetensors file" : "truncated"});
  }
  c.push_back({"CheckpointBitFlipInPickle",
               [](const ScratchDir& s) {
                 return segment_with_model(s, "flip.pt", micro_pt_flipped(micro_pickle_data_offset() + 100, 0x10));
               },
               "fails its CRC-32 check"});
  c.push_back({"CheckpointBitFlipInCentralDirectory",
               [](const ScratchDir& s) {
                 return segment_with_model(s, "flip.pt", micro_pt_flipped(micro_central_directory_offset(), 0x01));
               },
               "bad signature"});
  c.push_back({"CheckpointBitFlipInZip64EndRecord",
               [](const ScratchDir& s) {
                 // The central directory offset now points 256 bytes off.
                 const size_t field = micro_zip64_directory_offset_field();
                 return segment_with_model(s, "flip.pt", micro_pt_flipped(field + 1, 0x01));
               },
               "corrupted"});
  c.push_back({"CheckpointBitFlipInLocalHeader",
               [](const ScratchDir& s) {
                 // A bit of the name in the local header of record micro/data/0.
                 const size_t name = read_text(micro_pt()).find("micro/data/0");
                 return segment_with_model(s, "flip.pt", micro_pt_flipped(name + 3, 0x01));
               },
               "has a local header naming a different entry (corrupted)"});
  c.push_back({"CheckpointBitFlipInTensorData",
               [](const ScratchDir& s) {
                 // The lowest mantissa bit of one weight: a valid float, caught by the record's CRC.
                 const size_t at = micro_weight_offset("sam_prompt_encoder.point_embeddings.1.weight");
                 return segment_with_model(s, "flip.pt", micro_pt_flipped(at + 8, 0x01));
               },
               "' fails its CRC-32 check"});
  c.push_back({"CheckpointStorageBytesTurnedToNaN",
               [](const ScratchDir& s) {
                 // NaN bytes with the record's CRC fixed up: only the finite check can tell.
                 Bytes b = micro_pt_bytes();
                 const size_t at = micro_weight_offset("sam_prompt_encoder.point_embeddings.1.weight");
                 std::fill_n(b.begin() + static_cast<std::ptrdiff_t>(at) + 8, 4, 0xff);
                 fix_crc_of_record_containing(b, at);
                 return segment_with_model(s, "nan.pt", b);
               },
               "key 'sam_prompt_encoder.point_embeddings.1.weight' holds a non-finite value (NaN) at flat index 2"});
  c.push_back({"CheckpointPickleCallsOsSystem",
               [](const ScratchDir& s) {
                 const std::string touch = "touch " + s.file("pwned");
                 std::string pickle = "\x80\x02" "cos\nsystem\nX";
                 for (int i = 0; i < 4; ++i) pickle.push_back(static_cast<char>((touch.size() >> (8 * i)) & 0xff));
                 pickle += touch + "\x85R.";
                 return segment_with_model(s, "evil.pt", checkpoint_zip(to_bytes(pickle)).build().bytes);
               },
               "forbidden global 'os.system'"});
  c.push_back({"CheckpointPickleUsesUnsupportedOpcode",
               [](const ScratchDir& s) {
                 const Bytes newobj = to_bytes("\x80\x02" "ccollections\nOrderedDict\n)\x81.");
                 return segment_with_model(s, "newobj.pt", checkpoint_zip(newobj).build().bytes);
               },
               "opcode 0x81"});
  c.push_back({"CheckpointTensorOffsetOutsideStorage",
               [](const ScratchDir& s) {
                 return segment_with_model(s, "offset.pt", checkpoint_zip(one_tensor_pickle(6, 5)).build().bytes);
               },
               "reaches beyond its storage of 6 elements"});
  c.push_back({"CheckpointStorageLargerThanItsRecord",
               [](const ScratchDir& s) {
                 return segment_with_model(s, "size.pt", checkpoint_zip(one_tensor_pickle(100, 0)).build().bytes);
               },
               "has 24 bytes but declares 100 elements"});
  c.push_back({"CheckpointZipEntriesOverlap",
               [](const ScratchDir& s) {
                 const Bytes pickle = one_tensor_pickle(6, 0);
                 ZipBuilder zip;
                 zip.add("x/data.pkl", pickle).declared_size = static_cast<int64_t>(pickle.size()) + 70;
                 zip.add("x/data/0", six_floats());
                 return segment_with_model(s, "overlap.pt", zip.build().bytes);
               },
               "overlap"});
  c.push_back({"CheckpointZipEntryOfOneTerabyte",
               [](const ScratchDir& s) {
                 ZipBuilder zip = checkpoint_zip(one_tensor_pickle(6, 0));
                 zip.zip64(true);
                 zip.add("x/data/1", Bytes(8, 0)).declared_size = int64_t{1} << 40;
                 return segment_with_model(s, "huge.pt", zip.build().bytes);
               },
               "runs past the end of the data area"});
  c.push_back({"CheckpointZipEntryCompressed",
               [](const ScratchDir& s) {
                 ZipBuilder zip = checkpoint_zip(one_tensor_pickle(6, 0));
                 zip.add("x/data/1", Bytes(8, 0)).method = 8;
                 return segment_with_model(s, "deflated.pt", zip.build().bytes);
               },
               "only stored entries are supported"});

  // --- safetensors ---
  const std::string good_entry = R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";
  c.push_back({"SafetensorsHeaderLengthBeyondFile",
               [good_entry](const ScratchDir& s) {
                 return segment_with_model(s, "w.safetensors",
                                           safetensors_file("{" + good_entry + "}", six_floats(), 1 << 20));
               },
               "exceeds the file size"});
  c.push_back({"SafetensorsBadJson",
               [](const ScratchDir& s) {
                 return segment_with_model(s, "w.safetensors", safetensors_file(R"({"w":{"dtype":"F32",)", {}));
               },
               "not valid JSON"});
  c.push_back({"SafetensorsOverlappingOffsets",
               [](const ScratchDir& s) {
                 return segment_with_model(
                     s, "w.safetensors",
                     safetensors_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                      R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                                      six_floats()));
               },
               "tensors 'a' and 'b' overlap"});
  c.push_back({"SafetensorsOffsetsOutOfRange",
               [](const ScratchDir& s) {
                 return segment_with_model(
                     s, "w.safetensors",
                     safetensors_file(R"({"w":{"dtype":"F32","shape":[6],"data_offsets":[4096,4120]}})", six_floats()));
               },
               "lie outside the data section"});
  c.push_back({"SafetensorsWrongDtype",
               [](const ScratchDir& s) {
                 return segment_with_model(
                     s, "w.safetensors",
                     safetensors_file(R"({"w":{"dtype":"I64","shape":[3],"data_offsets":[0,24]}})", six_floats()));
               },
               "only F32, F16 and BF16 are supported"});
  c.push_back({"SafetensorsSizeDoesNotMatchShape",
               [](const ScratchDir& s) {
                 return segment_with_model(
                     s, "w.safetensors",
                     safetensors_file(R"({"w":{"dtype":"F32","shape":[7],"data_offsets":[0,24]}})", six_floats()));
               },
               "need 28"});

  // --- checkpoint contents ---
  c.push_back({"CheckpointMissingKey",
               [](const ScratchDir& s) {
                 Segment run;
                 run.model = micro_weights_with(s, [](NamedTensors& t) {
                   std::erase_if(t, [](const auto& e) { return e.first == "sam_mask_decoder.iou_token.weight"; });
                 });
                 return run.args(s);
               },
               "missing key 'sam_mask_decoder.iou_token.weight'"});
  c.push_back({"CheckpointWrongShape",
               [](const ScratchDir& s) {
                 Segment run;
                 run.model = micro_weights_with(s, [](NamedTensors& t) {
                   Tensor& w = weight(t, "image_encoder.trunk.blocks.0.attn.qkv.weight");
                   w = w.reshaped({1, w.numel()});
                 });
                 return run.args(s);
               },
               "'image_encoder.trunk.blocks.0.attn.qkv.weight' has shape [1, 768] but variant"});
  c.push_back({"CheckpointNaNWeight",
               [](const ScratchDir& s) {
                 Segment run;
                 run.model = micro_weights_with(s, [](NamedTensors& t) {
                   Tensor& w = weight(t, "sam_mask_decoder.iou_token.weight");
                   w = w.clone();
                   w[5] = std::numeric_limits<float>::quiet_NaN();
                 });
                 return run.args(s);
               },
               "key 'sam_mask_decoder.iou_token.weight' holds a non-finite value (NaN) at flat index 5"});
  c.push_back({"CheckpointInfWeight",
               [](const ScratchDir& s) {
                 Segment run;
                 run.model = micro_weights_with(s, [](NamedTensors& t) {
                   Tensor& w = weight(t, "image_encoder.neck.convs.0.conv.bias");
                   w = w.clone();
                   w[0] = -std::numeric_limits<float>::infinity();
                 });
                 return run.args(s);
               },
               "key 'image_encoder.neck.convs.0.conv.bias' holds a non-finite value (Inf)"});
  c.push_back({"CheckpointOfAnotherVariant",
               [](const ScratchDir& s) {
                 return std::vector<std::string>{"encode", "--model", micro_pt(), "--variant", "tiny", "--image",
                                                 micro_image(), "--out", s.file("features.safetensors")};
               },
               "--variant"});

  // --- config YAML ---
  c.push_back({"ConfigZeroEmbedDim",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "embed_dim: 16", "embed_dim: 0");
                 return run.args(s);
               },
               "embed_dim"});
  c.push_back({"ConfigWindowCannotTile",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "window_spec: [8, 6, 6, 3]", "window_spec: [7, 6, 6, 3]");
                 return run.args(s);
               },
               "window_spec[0] (7) must tile the patch grid 64"});
  c.push_back({"ConfigHeadsDoNotDivideWidth",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "num_heads: 1", "num_heads: 3");
                 return run.args(s);
               },
               "is not divisible by its 3 heads"});
  c.push_back({"ConfigUnknownTarget",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "sam2.modeling.backbones.hieradet.Hiera", "os.system");
                 return run.args(s);
               },
               "trunk._target_ is 'os.system'"});
  c.push_back({"ConfigNotYaml",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "model:", "model: [unclosed");
                 return run.args(s);
               },
               "not valid YAML"});
  c.push_back({"ConfigIsDevZero",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = "/dev/zero";
                 return run.args(s);
               },
               "config '/dev/zero' is not a regular file"});
  c.push_back({"ConfigHugeValue",
               [](const ScratchDir& s) {
                 Segment run;
                 run.config = micro_yaml_with(s, "num_heads: 1", "num_heads: 99999999999999999999");
                 return run.args(s);
               },
               "num_heads has an unexpected type"});

  // --- images ---
  c.push_back({"ImageIsText",
               [](const ScratchDir& s) { return segment_with_image(s, "notes.png", to_bytes("hello, I am text")); },
               "not a PNG or JPEG file"});
  c.push_back({"ImageIsDevZero",
               [](const ScratchDir& s) {
                 Segment run;
                 run.image = "/dev/zero";
                 return run.args(s);
               },
               "'/dev/zero' is not a regular file"});
  c.push_back({"ImageEmpty", [](const ScratchDir& s) { return segment_with_image(s, "empty.png", {}); },
               "the file is empty"});
  c.push_back({"PngTruncated",
               [](const ScratchDir& s) {
                 const Bytes png = noise_png(64, 64);
                 return segment_with_image(s, "cut.png", Bytes(png.begin(), png.begin() + png.size() / 2));
               },
               "truncated"});
  c.push_back({"PngTruncatedInHeader",
               [](const ScratchDir& s) {
                 const Bytes png = noise_png(64, 64);
                 return segment_with_image(s, "cut.png", Bytes(png.begin(), png.begin() + 20));
               },
               "truncated"});
  c.push_back({"JpegTruncated",
               [](const ScratchDir& s) {
                 const Bytes jpeg = noise_jpeg(64, 64);
                 return segment_with_image(s, "cut.jpg", Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
               },
               "Premature end of JPEG file"});
  c.push_back({"PngDecompressionBomb",
               [](const ScratchDir& s) {
                 return segment_with_image(s, "bomb.png", png_claiming_size(200000, 200000));
               },
               "40000000000 pixels exceeds the limit of 100000000 pixels"});
  c.push_back({"ImageAboveLoweredPixelLimit",
               [](const ScratchDir& s) {
                 write_bytes(s.file("big.png"), png_claiming_size(1000, 1000));
                 Segment run;
                 run.image = s.file("big.png");
                 run.extra = {"--max-image-pixels", "999999"};
                 return run.args(s);
               },
               "exceeds the limit of 999999 pixels (decompression bomb?); raise the pixel limit only for trusted "
               "images (--max-image-pixels N)"});
  c.push_back({"PngZeroByZero",
               [](const ScratchDir& s) { return segment_with_image(s, "zero.png", png_claiming_size(0, 0)); },
               "cannot decode image"});

  // --- prompts ---
  c.push_back({"PointOutsideImage", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "500,20"}); },
               "lies outside the 288x112 image"});
  c.push_back({"PointNegative", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "-1,20"}); },
               "lies outside"});
  c.push_back({"PointNaN", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "nan,20"}); },
               "'nan' is not a finite number"});
  c.push_back({"PointInfinite", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "10,1e999"}); },
               "is not a finite number"});
  c.push_back({"PointBadLabel", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "10,20,7"}); },
               "LABEL must be 1 (object) or 0 (background)"});
  c.push_back({"PointTrailingText", [](const ScratchDir& s) { return segment_with_prompt(s, {"--point", "10,20px"}); },
               "'20px' is not a finite number"});
  c.push_back({"BoxReversed", [](const ScratchDir& s) { return segment_with_prompt(s, {"--box", "50,10,20,40"}); },
               "has x1 < x0 or y1 < y0"});
  c.push_back({"BoxThreeNumbers", [](const ScratchDir& s) { return segment_with_prompt(s, {"--box", "1,2,3"}); },
               "expected X0,Y0,X1,Y1"});
  c.push_back({"TooManyPoints",
               [](const ScratchDir& s) {
                 std::vector<std::string> prompt;
                 for (int i = 0; i <= kMaxPoints; ++i) {
                   prompt.push_back("--point");
                   prompt.push_back(std::to_string(i) + ",10");
                 }
                 return segment_with_prompt(s, prompt);
               },
               "too many points in one prompt: 65 (at most 64)"});
  c.push_back({"NoPrompt", [](const ScratchDir& s) { return segment_with_prompt(s, {}); },
               "empty prompt"});
  c.push_back({"MaskInputWrongShape",
               [](const ScratchDir& s) {
                 write_safetensors(s.file("mask.safetensors"), {{"m", Tensor({1, 32, 32})}}, {});
                 return segment_with_prompt(s, {"--point", "10,10", "--mask-input", s.file("mask.safetensors")});
               },
               "has shape [1, 32, 32], expected [1, 64, 64]"});
  c.push_back({"MaskInputNaN",
               [](const ScratchDir& s) {
                 Tensor mask({1, 64, 64});
                 mask[7] = std::numeric_limits<float>::quiet_NaN();
                 write_safetensors(s.file("mask.safetensors"), {{"m", mask}}, {});
                 return segment_with_prompt(s, {"--mask-input", s.file("mask.safetensors")});
               },
               "mask input holds a non-finite value at index 7"});

  // --- several objects (--prompts FILE.json, repeated --box) ---
  c.push_back({"PromptsNotJson",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, "[{\"points\": [[1, 2]]"); },
               "prompts.json': not valid JSON (error at byte"});
  c.push_back({"PromptsNotAList",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"({"points": [[1, 2]]})"); },
               "must be a JSON list of objects"});
  c.push_back({"PromptsEmptyList", [](const ScratchDir& s) { return segment_with_prompts_file(s, "[]"); },
               "the list of objects is empty"});
  c.push_back({"PromptsUnknownField",
               [](const ScratchDir& s) {
                 return segment_with_prompts_file(s, R"([{"points": [[1, 2]]}, {"point": [[1, 2]]}])");
               },
               "object 1, \"point\": is not a field of an object"});
  c.push_back({"PromptsBoxThreeNumbers",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"([{"box": [1, 2, 3]}])"); },
               "object 0, \"box\": must be [x0, y0, x1, y1], got [1,2,3]"});
  c.push_back({"PromptsPointAsText",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"([{"points": [["10", 20]]}])"); },
               "object 0, \"points[0][0]\": must be a number, got \"10\""});
  c.push_back({"PromptsBadLabel",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"([{"points": [[10, 20, 7]]}])"); },
               "object 0, \"points[0][2]\": label must be 1 (object) or 0 (background)"});
  c.push_back({"PromptsHugeNumber",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"([{"points": [[1e999, 20]]}])"); },
               "holds a number out of range"});
  c.push_back({"PromptsObjectWithoutPrompt",
               [](const ScratchDir& s) {
                 return segment_with_prompts_file(s, R"([{"points": [[1, 2]]}, {"name": "dog"}])");
               },
               "object 1: has no prompt: give points, a box or a mask_input"});
  c.push_back({"PromptsPointOutsideImage",
               [](const ScratchDir& s) {
                 return segment_with_prompts_file(s, R"([{"points": [[10, 20]]}, {"points": [[500, 20]]}])");
               },
               "object 1: point 0 (500, 20) lies outside the 288x112 image"});
  c.push_back({"PromptsBoxReversed",
               [](const ScratchDir& s) { return segment_with_prompts_file(s, R"([{"box": [50, 10, 20, 40]}])"); },
               "object 0: box [50, 10, 20, 40] has x1 < x0 or y1 < y0"});
  c.push_back({"PromptsMaskInputMissing",
               [](const ScratchDir& s) {
                 return segment_with_prompts_file(s, R"([{"points": [[1, 2]], "mask_input": "nowhere.safetensors"}])");
               },
               "object 0, \"mask_input\" '"});
  c.push_back({"PromptsMaskInputWrongShape",
               [](const ScratchDir& s) {
                 write_safetensors(s.file("mask.safetensors"), {{"m", Tensor({1, 32, 32})}}, {});
                 return segment_with_prompts_file(s, R"([{"box": [1, 2, 30, 40]}, {"mask_input": "mask.safetensors"}])");
               },
               "object 1, \"mask_input\" '"});
  c.push_back({"PromptsTooManyObjects",
               [](const ScratchDir& s) {
                 std::string text = "[";
                 for (int i = 0; i <= 256; ++i) text += std::string(i ? "," : "") + R"({"points": [[1, 2]]})";
                 return segment_with_prompts_file(s, text + "]");
               },
               "257 objects; at most 256 per run"});
  c.push_back({"PromptsWithPoint",
               [](const ScratchDir& s) {
                 write_text(s.file("prompts.json"), R"([{"points": [[1, 2]]}])");
                 return segment_with_prompt(s, {"--prompts", s.file("prompts.json"), "--point", "1,2"});
               },
               "--point excludes --prompts", kUsageError});
  c.push_back({"SeveralBoxesWithPoint",
               [](const ScratchDir& s) {
                 return segment_with_prompt(s, {"--box", "1,2,30,40", "5,6,70,80", "--point", "10,10"});
               },
               "several --box make one object each and cannot share --point or --mask-input"});
  c.push_back({"SeveralBoxesOneReversed",
               [](const ScratchDir& s) { return segment_with_prompt(s, {"--box", "1,2,30,40", "--box", "50,10,20,40"}); },
               "object 1 (--box 50,10,20,40): box [50, 10, 20, 40] has x1 < x0 or y1 < y0"});

  // --- exports ---
  c.push_back({"CutoutAsJpeg", [](const ScratchDir& s) { return segment_with_extra(s, {"--cutout", s.file("c.jpg")}); },
               "a cut-out is written as RGBA PNG (JPEG has no transparency); name it .png"});
  // Removing every speck of at most a million low-res pixels leaves nothing to cut out.
  c.push_back({"CutoutOfEmptyMask",
               [](const ScratchDir& s) {
                 return segment_with_extra(s, {"--cutout", s.file("c.png"), "--max-sprinkle-area", "1000000"});
               },
               "cut-out: the mask is empty, there is no object to cut out"});
  c.push_back({"CutoutOfEmptyMaskOfOneObject",
               [](const ScratchDir& s) {
                 return segment_with_prompt(s, {"--box", "1,2,30,40", "5,6,70,80", "--cutout", s.file("c.png"),
                                                "--max-sprinkle-area", "1000000"});
               },
               "object 0 (--box 1,2,30,40): cut-out: the mask is empty"});
  c.push_back({"CutoutIntoMissingFolder",
               [](const ScratchDir& s) { return segment_with_extra(s, {"--cutout", s.file("nowhere/c.png")}); },
               "--cutout"});
  c.push_back({"PolygonsIntoMissingFolder",
               [](const ScratchDir& s) { return segment_with_extra(s, {"--polygons", s.file("nowhere/p.json")}); },
               "--polygons"});
  c.push_back({"NegativePolygonTolerance",
               [](const ScratchDir& s) {
                 return segment_with_extra(s, {"--polygons", s.file("p.json"), "--polygon-tolerance", "-1"});
               },
               "--polygon-tolerance", kUsageError});
  c.push_back({"RleWithoutJson",
               [](const ScratchDir& s) {
                 return std::vector<std::string>{"segment", "--model", micro_pt(), "--config", micro_yaml(),
                                                 "--image", micro_image(), "--out", s.file("out.png"), "--point",
                                                 "1,2", "--rle"};
               },
               "--rle requires --json", kUsageError});

  // --- features from `sam2rt encode` ---
  c.push_back({"FeaturesFromAnotherTool",
               [](const ScratchDir& s) {
                 write_safetensors(s.file("f.safetensors"), {{"image_embed", Tensor({1, 32, 16, 16})}}, {});
                 Segment run;
                 run.extra = {"--features", s.file("f.safetensors")};
                 return run.args(s);
               },
               "was not written by `sam2rt encode`"});
  c.push_back({"FeaturesHoldingNaN",
               [](const ScratchDir& s) {
                 Tensor embed({1, 32, 16, 16});
                 embed[3] = std::numeric_limits<float>::quiet_NaN();
                 write_safetensors(s.file("f.safetensors"),
                                   {{"image_embed", embed},
                                    {"feat_s1", Tensor({1, 8, 32, 32})},
                                    {"feat_s0", Tensor({1, 4, 64, 64})}},
                                   {{"format", "sam2rt.features.v1"},
                                    {"orig_width", "288"},
                                    {"orig_height", "112"},
                                    {"image_size", "256"}});
                 Segment run;
                 run.extra = {"--features", s.file("f.safetensors"), "--force-features"};
                 return run.args(s);
               },
               "'image_embed' holds NaN or Inf values"});
  c.push_back({"FeaturesWithoutModelRecord",
               [](const ScratchDir& s) {
                 write_safetensors(s.file("f.safetensors"),
                                   {{"image_embed", Tensor({1, 32, 16, 16})},
                                    {"feat_s1", Tensor({1, 8, 32, 32})},
                                    {"feat_s0", Tensor({1, 4, 64, 64})}},
                                   {{"format", "sam2rt.features.v1"},
                                    {"orig_width", "288"},
                                    {"orig_height", "112"},
                                    {"image_size", "256"}});
                 Segment run;
                 run.extra = {"--features", s.file("f.safetensors")};
                 return run.args(s);
               },
               "do not record which model made them (written by an older sam2rt); encode the image again"});
  c.push_back({"FeaturesOfOtherWeights",
               [](const ScratchDir& s) {
                 const CliResult encoded =
                     run_cli({"encode", "--synthetic-weights", "7", "--config", micro_yaml(), "--image", micro_image(),
                              "--out", s.file("f.safetensors")},
                             s);
                 if (encoded.exit_code != 0) throw std::runtime_error("encode failed: " + encoded.err);
                 Segment run;
                 run.extra = {"--features", s.file("f.safetensors")};
                 return run.args(s);
               },
               ", but this model has weights "});

  // --- output paths (every other output of the run must survive too) ---
  c.push_back({"OutInMissingDirectory",
               [](const ScratchDir& s) {
                 Segment run;
                 run.out = "missing/dir/out.png";
                 return run.args(s);
               },
               "--out: cannot write"});
  c.push_back({"OverlayInMissingDirectory",
               [](const ScratchDir& s) {
                 Segment run;
                 run.overlay = "missing/overlay.png";
                 return run.args(s);
               },
               "--overlay: cannot write"});
  c.push_back({"JsonInMissingDirectory",
               [](const ScratchDir& s) {
                 Segment run;
                 run.json = "missing/result.json";
                 return run.args(s);
               },
               "does the directory exist"});
  c.push_back({"LogitsInMissingDirectory",
               [](const ScratchDir& s) {
                 Segment run;
                 run.logits = "missing/logits.safetensors";
                 return run.args(s);
               },
               "--logits: cannot write"});
  c.push_back({"OutIsADirectory",
               [](const ScratchDir& s) {
                 std::filesystem::create_directories(s.file("a_directory"));
                 Segment run;
                 run.out = "a_directory";
                 return run.args(s);
               },
               "is a directory; give a file name"});
  c.push_back({"OutNamedJpeg",
               [](const ScratchDir& s) {
                 Segment run;
                 run.out = "mask.jpg";
                 return run.args(s);
               },
               "a mask is written as PNG only"});
  c.push_back({"OverlayUnsupportedExtension",
               [](const ScratchDir& s) {
                 Segment run;
                 run.overlay = "overlay.tiff";
                 return run.args(s);
               },
               "unsupported extension '.tiff'; name it .png, .jpg or .jpeg"});
  c.push_back({"EncodeOutInMissingDirectory",
               [](const ScratchDir& s) {
                 return encode_args(s, micro_pt(), micro_yaml(), micro_image(), "missing/features.safetensors");
               },
               "--out: cannot write"});
  c.push_back({"EncodeUnknownFeatureDtype",
               [](const ScratchDir& s) {
                 std::vector<std::string> args = encode_args(s, micro_pt(), micro_yaml(), micro_image());
                 args.insert(args.end(), {"--feature-dtype", "int8"});
                 return args;
               },
               "--feature-dtype: int8 not in {float32,bfloat16,float16}", kUsageError});
  c.push_back({"EncodeFailsOnBrokenImage",
               [](const ScratchDir& s) {
                 write_text(s.file("notes.png"), "not an image");
                 return encode_args(s, micro_pt(), micro_yaml(), s.file("notes.png"));
               },
               "not a PNG or JPEG file"});

  // --- everything (automatic mask generator parameters) ---
  struct AmgCase {
    std::string name;
    std::vector<std::string> flags;
    std::string message;
    std::string grids_file;  // written to grids.json when given
  };
  const AmgCase amg_cases[] = {
      {"NegativeGrid", {"--points-per-side", "-4"}, "points_per_side must be at least 1", ""},
      {"ZeroBatch", {"--points-per-batch", "0"}, "points_per_batch must be at least 1", ""},
      {"IouThreshAboveOne", {"--pred-iou-thresh", "1.5"}, "pred_iou_thresh must be in [0, 1]", ""},
      {"NegativeStabilityThresh", {"--stability-score-thresh", "-0.1"}, "stability_score_thresh must be in [0, 1]", ""},
      {"NaNStabilityOffset", {"--stability-score-offset", "nan"}, "stability_score_offset must be a finite number", ""},
      {"BoxNmsAboveOne", {"--box-nms-thresh", "2"}, "box_nms_thresh must be in [0, 1]", ""},
      {"CropNmsNegative", {"--crop-nms-thresh", "-1"}, "crop_nms_thresh must be in [0, 1]", ""},
      {"OverlapRatioOne", {"--crop-overlap-ratio", "1"}, "crop_overlap_ratio must be in [0, 1)", ""},
      {"NegativeCropLayers", {"--crop-n-layers", "-1"}, "crop_n_layers must be in [0, 6]", ""},
      {"DownscaleZero", {"--crop-n-points-downscale-factor", "0"}, "crop_n_points_downscale_factor must be at least 1",
       ""},
      {"CropLayerWithoutPoints",
       {"--points-per-side", "2", "--crop-n-layers", "2", "--crop-n-points-downscale-factor", "2"},
       "crop layer 2 gets no points", ""},
      {"NegativeMinRegionArea", {"--min-mask-region-area", "-3"}, "min_mask_region_area must be a finite number >= 0",
       ""},
      {"UnknownOutputMode", {"--output-mode", "polygons"}, "output_mode 'polygons' is not one of", ""},
      {"BinaryMaskWithoutOutDir", {"--output-mode", "binary_mask"}, "give --out-dir", ""},
      {"EmptyPointGrid", {}, "point_grids[0] is empty", "[[]]"},
      {"GridAndPointsPerSide", {"--points-per-side", "4"}, "exactly one of --points-per-side and --point-grids",
       "[[[0.5, 0.5]]]"},
      {"GridNotJson", {}, "expected JSON like", "[[0.5, 0.5]"},
  };
  for (const AmgCase& amg : amg_cases) {
    c.push_back({"Everything" + amg.name,
                 [amg](const ScratchDir& s) {
                   std::vector<std::string> a = {"everything", "--model", micro_pt(), "--config", micro_yaml(),
                                                 "--image", micro_image(), "--json", s.file("result.json"),
                                                 "--overlay", s.file("overlay.png")};
                   if (!amg.grids_file.empty()) {
                     write_text(s.file("grids.json"), amg.grids_file);
                     a.insert(a.end(), {"--point-grids", s.file("grids.json")});
                   }
                   a.insert(a.end(), amg.flags.begin(), amg.flags.end());
                   return a;
                 },
                 amg.message});
  }

  // --- compare ---
  c.push_back({"CompareHostileKeys",
               [](const ScratchDir& s) {
                 // A megabyte-scale key once went through std::regex (deep recursion), and
                 // decimating an empty plane divided by zero.
                 const std::string key(100000, 'k');
                 write_safetensors(s.file("a.safetensors"), {{key + ".dec2", Tensor({1, 1})}}, {});
                 write_safetensors(s.file("b.safetensors"), {{key, Tensor({0, 4})}}, {});
                 return std::vector<std::string>{"compare", s.file("a.safetensors"), s.file("b.safetensors")};
               },
               "has no pixel planes, nothing to decimate by 2"});

  // --- command line ---
  c.push_back({"NoWeightsGiven",
               [](const ScratchDir& s) {
                 return std::vector<std::string>{"encode", "--image", micro_image(), "--out",
                                                 s.file("features.safetensors")};
               },
               "--synthetic-weights"});
  c.push_back({"BadSyntheticSalt",
               [](const ScratchDir& s) {
                 return std::vector<std::string>{"encode", "--synthetic-weights", "12x", "--image", micro_image(),
                                                 "--out", s.file("features.safetensors")};
               },
               "not a 64-bit unsigned integer"});
  c.push_back({"ModelFileDoesNotExist",
               [](const ScratchDir& s) {
                 Segment run;
                 run.model = s.file("nowhere.pt");
                 return run.args(s);
               },
               "nowhere.pt (get an official checkpoint with `sam2rt download tiny|small|base_plus|large`; links in "
               "models/README.md)",
               kUsageError});
  c.push_back({"UnknownOption",
               [](const ScratchDir& s) {
                 Segment run;
                 run.extra = {"--colour", "red"};
                 return run.args(s);
               },
               "--colour", kUsageError});
  c.push_back({"MistypedCommand",
               [](const ScratchDir&) { return std::vector<std::string>{"segmnt", "--point", "1,2"}; },
               "unknown command 'segmnt'; did you mean 'segment'?", kUsageError});
  c.push_back({"MistypedOption",
               [](const ScratchDir& s) {
                 Segment run;
                 run.extra = {"--poin", "1,2"};
                 return run.args(s);
               },
               "unknown option '--poin' for `sam2rt segment`; did you mean '--point'? (see `sam2rt segment --help`)",
               kUsageError});
  c.push_back({"NoCommand", [](const ScratchDir&) { return std::vector<std::string>{}; }, "subcommand",
               kUsageError});
  return c;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, FailsSafe) {
  const Case& c = GetParam();
  ScratchDir s("catalogue_" + c.name);
  for (const char* output : kOutputs) write_text(s.file(output), kEarlierRun);
  const std::vector<std::string> args = c.command(s);
  std::set<std::filesystem::path> before;
  for (const auto& entry : std::filesystem::directory_iterator(s.path())) before.insert(entry.path());

  const CliResult r = run_cli(args, s, kRunTimeoutSeconds);

  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  const size_t start = r.err.find("sam2rt: error: ");
  ASSERT_NE(start, std::string::npos) << "stderr was: " << r.err;
  const std::string line = r.err.substr(start);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << "the error must be one final line: " << r.err;
  EXPECT_NE(line.find(c.fragment), std::string::npos) << "expected '" << c.fragment << "' in: " << line;
  EXPECT_EQ(r.out, "") << "a failed run prints no result";

  for (const char* output : kOutputs) {
    EXPECT_EQ(read_text(s.file(output)), kEarlierRun) << output << " was touched by the failed run";
  }
  for (const auto& entry : std::filesystem::directory_iterator(s.path())) {
    const std::string name = entry.path().filename().string();
    if (name == "stdout.txt" || name == "stderr.txt") continue;
    EXPECT_TRUE(before.count(entry.path())) << "the failed run left '" << name << "' behind";
  }
  EXPECT_FALSE(std::filesystem::exists(s.file("pwned"))) << "the checkpoint ran a shell command";
}

INSTANTIATE_TEST_SUITE_P(RobustnessCatalogue, BadInput, ::testing::ValuesIn(catalogue()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Decision (docs/ROBUSTNESS.md): images one pixel wide or high are valid
// photos; they are resized to the model's square input like any other.
TEST(RobustnessCatalogueEdges, OneByNAndNByOneImagesSegment) {
  ScratchDir s("catalogue_1xn");
  for (const auto& [width, height] : {std::pair{1, 50}, std::pair{50, 1}, std::pair{1, 1}}) {
    const std::vector<uint8_t> rgb = noise_rgb(width, height);
    write_png_rgb8(s.file("thin.png"), rgb.data(), width, height);
    Segment run;
    run.image = s.file("thin.png");
    run.prompt = {"--point", "0.5,0.5", "--box", "0,0," + std::to_string(width) + "," + std::to_string(height)};
    const CliResult r = run_cli(run.args(s), s, kRunTimeoutSeconds);
    ASSERT_EQ(r.exit_code, 0) << width << "x" << height << ": " << r.err;
    const std::string json = read_text(s.file("result.json"));
    EXPECT_NE(json.find("\"width\": " + std::to_string(width)), std::string::npos) << json;
    EXPECT_NE(json.find("\"height\": " + std::to_string(height)), std::string::npos) << json;
  }
}

// The counterpart of the catalogue: the same outputs of a run that succeeds
// are all replaced.
TEST(RobustnessCatalogueEdges, SuccessfulRunReplacesEveryOutput) {
  ScratchDir s("catalogue_success");
  for (const char* output : kOutputs) write_text(s.file(output), kEarlierRun);
  CliResult r = run_cli(Segment().args(s), s, kRunTimeoutSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* output : {"out.png", "overlay.png", "result.json", "logits.safetensors"}) {
    EXPECT_NE(read_text(s.file(output)), kEarlierRun) << output;
  }
  r = run_cli(encode_args(s, micro_pt(), micro_yaml(), micro_image()), s, kRunTimeoutSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_text(s.file("features.safetensors")), kEarlierRun);
}

}  // namespace
}  // namespace sam2rt::testing
