// Writes the small seed corpora of the fuzz targets into fuzz/corpus/<target>/
// (run by fuzz/make_seeds.sh). Every seed is a valid input of its parser, so
// the fuzzer starts from the accepted paths and mutates outwards.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "test_image_writer.h"
#include "test_pickle_builder.h"
#include "test_zip_builder.h"

namespace {

using sam2rt::testing::Bytes;
using sam2rt::testing::encode_test_jpeg;
using sam2rt::testing::encode_test_png_rows;
using sam2rt::testing::exif_with_orientation;
using sam2rt::testing::JpegSpec;
using sam2rt::testing::png_channels;
using sam2rt::testing::PickleBytes;
using sam2rt::testing::PngSpec;
using sam2rt::testing::to_bytes;
using sam2rt::testing::ZipBuilder;

std::filesystem::path corpus_root;

// A seed its parser refuses would only test the error paths.
void check_accepted(const std::string& target, const std::string& name, const Bytes& bytes) {
  try {
    if (target == "fuzz_torch_checkpoint") {
      sam2rt::load_torch_checkpoint(sam2rt::MappedFile::from_bytes(bytes, name));
    } else if (target == "fuzz_safetensors") {
      sam2rt::read_safetensors(sam2rt::MappedFile::from_bytes(bytes, name));
    } else if (target == "fuzz_image") {
      sam2rt::decode_image_bytes(bytes.data(), bytes.size(), name);
    }
  } catch (const sam2rt::Error& e) {
    std::fprintf(stderr, "seed %s is refused: %s\n", name.c_str(), e.what());
    std::exit(1);
  }
}

void write_seed(const std::string& target, const std::string& name, const Bytes& bytes) {
  check_accepted(target, name, bytes);
  const auto dir = corpus_root / target;
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// ---------------------------------------------------------------------------
// torch.save checkpoints

struct SeedTensor {
  std::string key, storage_type, storage_key;
  int64_t storage_numel, offset;
  std::vector<int64_t> sizes, strides;
};

// torch.save({"model": state_dict}) as torch writes it: protocol 2, a memoised
// _rebuild_tensor_v2, the state dict's _metadata attribute.
Bytes state_dict_pickle(const std::vector<SeedTensor>& tensors, bool wrap_in_model) {
  PickleBytes p;
  p.op(0x80).op(2);
  if (wrap_in_model) p.op('}').str("model");
  p.global("collections", "OrderedDict").op(')').op('R').op('(');
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SeedTensor& t = tensors[i];
    p.str(t.key);
    if (i == 0) {
      p.global("torch._utils", "_rebuild_tensor_v2").op('q').le(0, 1);
    } else {
      p.op('h').le(0, 1);
    }
    p.op('(').op('(').str("storage").global("torch", t.storage_type).str(t.storage_key).str("cpu");
    p.integer(t.storage_numel).op('t').op('Q');
    p.integer(t.offset).int_tuple(t.sizes).int_tuple(t.strides).op(0x89);
    p.global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
  }
  p.op('u');
  p.op('}').str("_metadata").global("collections", "OrderedDict").op(')').op('R');
  p.str("").op('}').str("version").integer(1).op('s').op('s').op('s').op('b');
  if (wrap_in_model) p.op('s');
  return p.op('.').bytes();
}

// The same dict the way a protocol 4 pickler frames and memoises it.
Bytes protocol4_pickle() {
  PickleBytes p;
  p.op(0x80).op(4).op(0x95).le(0, 8);
  p.op('}').op(0x94).op(0x8c).le(5, 1).raw("model").op(0x94);
  p.op(0x8c).le(11, 1).raw("collections").op(0x94).op(0x8c).le(11, 1).raw("OrderedDict").op(0x94).op(0x93).op(0x94);
  p.op(')').op('R').op(0x94).op(0x8c).le(1, 1).raw("w").op(0x94);
  p.op(0x8c).le(12, 1).raw("torch._utils").op(0x8c).le(18, 1).raw("_rebuild_tensor_v2").op(0x93).op(0x94);
  p.op('(').op('(').op(0x8c).le(7, 1).raw("storage");
  p.op(0x8c).le(5, 1).raw("torch").op(0x8c).le(12, 1).raw("FloatStorage");
  p.op(0x93).op(0x8c).le(1, 1).raw("0").op(0x8c).le(3, 1).raw("cpu").op('K').le(6, 1).op('t').op('Q');
  p.op('K').le(0, 1).op('K').le(2, 1).op('K').le(3, 1).op(0x86).op('K').le(3, 1).op('K').le(1, 1).op(0x86);
  p.op(0x89).op('h').le(4, 1).op(')').op('R').op('t').op('R').op('s').op('s').op('.');
  // The frame length covers everything after its own 8 bytes.
  Bytes bytes = p.bytes();
  const uint64_t frame = bytes.size() - 11;
  for (int i = 0; i < 8; ++i) bytes[3 + i] = static_cast<uint8_t>(frame >> (8 * i));
  return bytes;
}

Bytes floats(const std::vector<float>& values) {
  Bytes b(values.size() * 4);
  std::memcpy(b.data(), values.data(), b.size());
  return b;
}

void write_checkpoint_seeds() {
  const Bytes six = floats({0.5f, -1.5f, 2.25f, 3.0f, -4.0f, 5.5f});
  const Bytes halves = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x01, 0x00};  // 1, -2, inf, denormal
  const std::vector<SeedTensor> tensors = {
      {"a.weight", "FloatStorage", "0", 6, 0, {2, 3}, {3, 1}},
      {"a.bias", "HalfStorage", "1", 4, 1, {3}, {1}},
      {"b.t", "FloatStorage", "0", 6, 0, {3, 2}, {1, 3}},
      {"c", "BFloat16Storage", "2", 4, 0, {2, 2}, {2, 1}},
      {"d", "FloatStorage", "0", 6, 2, {1, 1, 2}, {7, 9, 1}},
  };
  auto build = [&](const std::string& folder, const Bytes& pickle, bool zip64, bool descriptors, bool order) {
    ZipBuilder zip;
    zip.zip64(zip64).data_descriptors(descriptors);
    zip.add(folder + "/data.pkl", pickle);
    if (order) zip.add(folder + "/byteorder", to_bytes("little"));
    zip.add(folder + "/data/0", six);
    zip.add(folder + "/data/1", halves);
    zip.add(folder + "/data/2", halves);
    zip.add(folder + "/version", to_bytes("3\n"));
    return zip.build().bytes;
  };
  const std::string t = "fuzz_torch_checkpoint";
  write_seed(t, "model_dict.pt", build("archive", state_dict_pickle(tensors, true), false, true, true));
  write_seed(t, "bare_zip64.pt", build("m", state_dict_pickle(tensors, false), true, false, false));
  write_seed(t, "protocol4.pt", build("p4", protocol4_pickle(), false, true, true));
}

// ---------------------------------------------------------------------------
// safetensors

Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
  Bytes b;
  std::string padded = header;
  while (padded.size() % 8 != 0) padded.push_back(' ');
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(padded.size() >> (8 * i)));
  b.insert(b.end(), padded.begin(), padded.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_safetensors_seeds() {
  const Bytes six = floats({0.5f, -1.5f, 2.25f, 3.0f, -4.0f, 5.5f});
  write_seed("fuzz_safetensors", "f32.safetensors",
             safetensors_bytes(R"({"__metadata__":{"format":"pt"},)"
                               R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
                               six));
  Bytes mixed = six;
  mixed.insert(mixed.end(), {0x00, 0x3c, 0x00, 0xc0, 0x80, 0x3f, 0x00, 0xc0});
  write_seed("fuzz_safetensors", "mixed.safetensors",
             safetensors_bytes(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
                               R"("h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},)"
                               R"("b":{"dtype":"BF16","shape":[2,1],"data_offsets":[28,32]},)"
                               R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[32,32]}})",
                               mixed));
  write_seed("fuzz_safetensors", "misaligned.safetensors",
             safetensors_bytes(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
                               Bytes{0, 0, 0, 0, 0x80, 0x3f}));
}

// ---------------------------------------------------------------------------
// images

// Rows of raw bytes (i * 37 + y * 11): any byte is a valid row of samples, and
// every 2-bit palette index is < 4, the palette's size.
Bytes encode_png(int width, int height, int bit_depth, int color_type, bool interlaced) {
  PngSpec spec;
  spec.width = width;
  spec.height = height;
  spec.bit_depth = bit_depth;
  spec.color_type = color_type;
  spec.interlaced = interlaced;
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    for (int i = 0; i < 4; ++i) {
      spec.palette.push_back({static_cast<png_byte>(60 * i), static_cast<png_byte>(255 - 60 * i), 90});
    }
    spec.palette_alpha = {0, 128};
  }
  const size_t row_bytes = (static_cast<size_t>(width) * png_channels(color_type) * bit_depth + 7) / 8;
  std::vector<Bytes> rows(static_cast<size_t>(height), Bytes(row_bytes));
  for (int y = 0; y < height; ++y) {
    for (size_t i = 0; i < row_bytes; ++i) rows[y][i] = static_cast<uint8_t>(i * 37 + y * 11);
  }
  return encode_test_png_rows(spec, std::move(rows));
}

// Quality 75 and the colour space libjpeg picks for the input: its defaults.
Bytes encode_jpeg(int width, int height, int components, J_COLOR_SPACE space, bool progressive, const Bytes& exif) {
  JpegSpec spec;
  spec.width = width;
  spec.height = height;
  spec.components = components;
  spec.in_color_space = space;
  spec.jpeg_color_space = space == JCS_RGB ? JCS_YCbCr : space;
  spec.quality = 75;
  spec.progressive = progressive;
  spec.exif = exif;
  const size_t row_size = static_cast<size_t>(width) * components;
  for (int y = 0; y < height; ++y) {
    for (size_t i = 0; i < row_size; ++i) spec.pixels.push_back(static_cast<uint8_t>(i * 29 + y * 13));
  }
  return encode_test_jpeg(spec);
}

void write_image_seeds() {
  const std::string t = "fuzz_image";
  write_seed(t, "gray1.png", encode_png(9, 5, 1, PNG_COLOR_TYPE_GRAY, false));
  write_seed(t, "gray16.png", encode_png(4, 3, 16, PNG_COLOR_TYPE_GRAY, false));
  write_seed(t, "gray_alpha.png", encode_png(3, 4, 8, PNG_COLOR_TYPE_GRAY_ALPHA, false));
  write_seed(t, "rgb8_interlaced.png", encode_png(11, 7, 8, PNG_COLOR_TYPE_RGB, true));
  write_seed(t, "rgba16.png", encode_png(3, 2, 16, PNG_COLOR_TYPE_RGB_ALPHA, false));
  write_seed(t, "palette2.png", encode_png(6, 6, 2, PNG_COLOR_TYPE_PALETTE, false));
  write_seed(t, "one_by_three.png", encode_png(1, 3, 8, PNG_COLOR_TYPE_RGB, false));
  write_seed(t, "gray.jpg", encode_jpeg(8, 8, 1, JCS_GRAYSCALE, false, {}));
  write_seed(t, "rgb_exif6.jpg", encode_jpeg(17, 9, 3, JCS_RGB, false, exif_with_orientation(6, false)));
  write_seed(t, "rgb_progressive.jpg", encode_jpeg(16, 16, 3, JCS_RGB, true, {}));
  write_seed(t, "cmyk.jpg", encode_jpeg(8, 4, 4, JCS_CMYK, false, {}));
}

// ---------------------------------------------------------------------------
// prompts (two bytes of width, two of height, then lines; see fuzz_prompt.cpp)

void write_prompt_seeds() {
  auto prompt = [](int width, int height, const std::string& lines) {
    Bytes b = {static_cast<uint8_t>(width - 1), static_cast<uint8_t>((width - 1) >> 8),
               static_cast<uint8_t>(height - 1), static_cast<uint8_t>((height - 1) >> 8)};
    b.insert(b.end(), lines.begin(), lines.end());
    return b;
  };
  write_seed("fuzz_prompt", "point.txt", prompt(288, 112, "p110,41\n"));
  write_seed("fuzz_prompt", "points_box.txt", prompt(500, 375, "p361,251.5,1\np10.5,2e1,0\nb71,22.75,426.75,300\n"));
  write_seed("fuzz_prompt", "mask.txt", prompt(64, 64, "m1,256,256,-3.5\np0,64\n"));
  write_seed("fuzz_prompt", "edge.txt", prompt(1, 512, "p1,512\nb0,0,1,512\n"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  corpus_root = argv[1];
  try {
    write_checkpoint_seeds();
    write_safetensors_seeds();
    write_image_seeds();
    write_prompt_seeds();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot write the seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
