#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "api/binary_mask.h"
#include "api/masks_overlay.h"
#include "api/video_predictor.h"
#include "commands.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "io/mask_rle.h"
#include "io/png_writer.h"
#include "io/video_file_writer.h"
#include "io/video_frames.h"
#include "mask_folder.h"
#include "model/preprocess.h"
#include "model_options.h"
#include "track_progress.h"
#include "track_prompts.h"

namespace sam2rt::cli {

namespace {

// A stream's frame count is unknown: the predictor is told it has this many
// (so t_diff_max is that of any video of 16 frames or more) and the end of
// the stream stops the tracking.
constexpr int64_t kStreamFrames = std::numeric_limits<int64_t>::max() / 4;
// A stream is tracked in runs of this many frames (propagate_in_video lists
// the frames of a run up front); runs continue from the kept outputs exactly.
constexpr int64_t kStreamFramesPerRun = 4096;

// Thrown by a stream's frame loader past its last frame: the end of the
// tracking, not a failure, once the first frame was read.
struct StreamEnded : Error {
  explicit StreamEnded(int64_t frame) : Error("the stream ended before frame " + std::to_string(frame)) {}
};

std::string mask_file_name(int64_t frame, int64_t obj_id) {
  char name[64];
  std::snprintf(name, sizeof(name), "%05lld_obj%lld.png", static_cast<long long>(frame),
                static_cast<long long>(obj_id));
  return name;
}

// A --mask PNG as add_new_mask takes it: [H, W], 1 where any channel is nonzero.
Tensor read_mask_png(const TrackPrompt& prompt, int64_t max_pixels) {
  RgbImage image;
  try {
    image = decode_image_file(prompt.mask_path, max_pixels);
  } catch (const Error& e) {
    throw Error(prompt.origin + ": " + e.what());
  }
  Tensor mask({image.height, image.width});
  float* out = mask.data();
  for (size_t i = 0; i < static_cast<size_t>(image.width) * static_cast<size_t>(image.height); ++i) {
    out[i] = (image.pixels[3 * i] | image.pixels[3 * i + 1] | image.pixels[3 * i + 2]) != 0 ? 1.0f : 0.0f;
  }
  return mask;
}

nlohmann::json prompts_json(const std::vector<TrackPrompt>& prompts) {
  nlohmann::json list = nlohmann::json::array();
  for (const TrackPrompt& prompt : prompts) {
    nlohmann::json entry = {{"obj_id", prompt.obj_id}, {"frame", prompt.frame}};
    if (!prompt.points.empty()) {
      entry["points"] = nlohmann::json::array();
      for (const PointPrompt& p : prompt.points) entry["points"].push_back({p.x, p.y, p.label});
    }
    if (prompt.box) entry["box"] = *prompt.box;
    if (!prompt.mask_path.empty()) entry["mask"] = prompt.mask_path;
    list.push_back(std::move(entry));
  }
  return list;
}

// The video's frames decoded once each: the predictor's loader and the
// overlay read the same frame, the one tracked last.
class DecodedFrames {
 public:
  DecodedFrames(VideoFrameSource& source, bool stream) : source_(source), stream_(stream) {}

  const RgbImage& frame(int64_t index) {
    if (index == index_) return image_;
    if (stream_ && index == index_ + 1) {
      std::optional<RgbImage> next = source_.next();
      if (!next) throw StreamEnded(index);
      image_ = std::move(*next);
    } else {
      image_ = source_.frame(index);
    }
    index_ = index;
    return image_;
  }

 private:
  VideoFrameSource& source_;
  bool stream_;
  int64_t index_ = -1;
  RgbImage image_;
};

struct TrackCommand {
  ModelOptions model;
  std::string video_path;
  std::vector<std::string> points, boxes, masks;
  std::vector<int64_t> obj_ids;
  bool reverse = false;
  std::optional<int64_t> start_frame;
  std::optional<int64_t> max_frames;
  std::string out_dir;
  std::string overlay_video_path;
  int overlay_fps = 25;
  std::string json_path;
  bool stream = false;
  bool quiet = false;
  CLI::App* app = nullptr;

  // The prompt options in command-line order, each with the object id of the --obj before it.
  std::vector<PromptArgument> prompt_arguments() const {
    std::vector<PromptArgument> arguments;
    size_t next_point = 0, next_box = 0, next_mask = 0, next_obj = 0;
    int64_t obj_id = 1;
    bool obj_prompted = true;
    for (const CLI::Option* option : app->parse_order()) {
      const std::string& name = option->get_name();
      if (name == "--obj") {
        if (!obj_prompted) break;
        obj_id = obj_ids.at(next_obj++);
        obj_prompted = false;
      }
      if (name == "--point") arguments.push_back({name, points.at(next_point++), obj_id});
      if (name == "--box") arguments.push_back({name, boxes.at(next_box++), obj_id});
      if (name == "--mask") arguments.push_back({name, masks.at(next_mask++), obj_id});
      obj_prompted = obj_prompted || name == "--point" || name == "--box" || name == "--mask";
    }
    if (!obj_prompted) {
      throw Error("--obj " + std::to_string(obj_id) + " has no --point, --box or --mask after it (--obj sets the "
                  "object of the prompts that follow it)");
    }
    return arguments;
  }

  void check_prompt_frames(const std::vector<TrackPrompt>& prompts, int64_t num_frames) const {
    for (const TrackPrompt& prompt : prompts) {
      if (stream && prompt.frame != 0) {
        throw Error(prompt.origin + ": with --stream, prompts are on frame 0 only (the frames after it are not read yet)");
      }
      if (prompt.frame >= num_frames) {
        throw Error(prompt.origin + ": frame " + std::to_string(prompt.frame) + " is outside the video's " +
                    std::to_string(num_frames) + " frames (0.." + std::to_string(num_frames - 1) + ")");
      }
    }
    if (start_frame && *start_frame >= num_frames) {
      throw Error("--start-frame " + std::to_string(*start_frame) + " is outside the video's " +
                  std::to_string(num_frames) + " frames (0.." + std::to_string(num_frames - 1) + ")");
    }
  }

  void run() const {
    const std::vector<TrackPrompt> prompts = group_track_prompts(prompt_arguments());
    if (prompts.empty()) throw Error("no prompts: give --point, --box or --mask (e.g. --point 0:125,85)");
    if (stream && reverse) throw Error("--reverse needs the frames again: it cannot be used with --stream");
    if (stream && start_frame) throw Error("--stream tracks from frame 0: it cannot be used with --start-frame");

    std::unique_ptr<VideoFrameSource> source = open_video_frames(video_path, model.max_image_pixels);
    const int64_t counted = source->frame_count();
    if (counted < 0 && !stream) {
      throw Error("--video '" + video_path + "': its frame count is unknown (a pipe or a camera): add --stream");
    }
    const int64_t num_frames = counted >= 0 ? counted : kStreamFrames;
    check_prompt_frames(prompts, num_frames);

    auto loaded = model.load(true);
    const int image_size = loaded->config().image_size;
    std::vector<Tensor> mask_inputs;
    for (const TrackPrompt& prompt : prompts) {
      mask_inputs.push_back(prompt.mask_path.empty() ? Tensor() : read_mask_png(prompt, model.max_image_pixels));
    }

    DecodedFrames decoded(*source, stream);
    VideoFrames frames{num_frames, source->width(), source->height(),
                       [&](int64_t index) { return preprocess_video_frame(decoded.frame(index), image_size); }};
    MaskFolder folder(out_dir, !stream);
    std::unique_ptr<AtomicFile> json_file;
    try {
      if (!json_path.empty()) json_file = std::make_unique<AtomicFile>(json_path);
    } catch (const Error& e) {
      throw Error(std::string("--json: ") + e.what());
    }
    // Frames in order: encoded as they are tracked, or with --reverse at the end from the final masks.
    std::unique_ptr<VideoFileWriter> overlay;
    if (!overlay_video_path.empty()) {
      try {
        overlay = std::make_unique<VideoFileWriter>(overlay_video_path, frames.width, frames.height, overlay_fps);
      } catch (const Error& e) {
        throw Error(std::string("--overlay-video: ") + e.what());
      }
    }

    VideoPredictor predictor(loaded, frames, VideoPredictorOptions{.tracking = std::nullopt, .keep_all_outputs = false});
    for (size_t i = 0; i < prompts.size(); ++i) {
      const TrackPrompt& prompt = prompts[i];
      try {
        if (!prompt.mask_path.empty()) {
          predictor.add_new_mask(prompt.frame, prompt.obj_id, mask_inputs[i]);
          continue;
        }
        std::vector<std::array<float, 2>> xy;
        std::vector<int> labels;
        for (const PointPrompt& p : prompt.points) {
          xy.push_back({p.x, p.y});
          labels.push_back(p.label);
        }
        predictor.add_new_points_or_box(prompt.frame, prompt.obj_id, xy, labels, true, true, prompt.box);
      } catch (const Error& e) {
        throw Error(prompt.origin + ": " + e.what());
      }
    }
    mask_inputs.clear();

    if (json_file) {
      const nlohmann::json head = {{"video", video_path},
                                   {"width", frames.width},
                                   {"height", frames.height},
                                   {"model", model.source().describe(loaded->config())},
                                   {"prompts", prompts_json(prompts)},
                                   {"reverse", reverse}};
      std::string text = head.dump(1);
      text.erase(text.rfind('\n'));  // the closing brace: the frames follow
      text += ",\n \"frames\": [";
      json_file->write(text.data(), text.size());
    }

    int64_t first_prompted = num_frames, last_prompted = 0;
    for (const TrackPrompt& prompt : prompts) {
      first_prompted = std::min(first_prompted, prompt.frame);
      last_prompted = std::max(last_prompted, prompt.frame);
    }
    const int64_t forward_start = start_frame.value_or(first_prompted);
    const int64_t reverse_start = start_frame.value_or(last_prompted);
    int64_t total = std::min(num_frames - 1, forward_start + max_frames.value_or(num_frames)) - forward_start + 1;
    if (reverse && reverse_start > 0) total += std::min(reverse_start, max_frames.value_or(num_frames)) + 1;
    TrackProgress progress(stream && counted < 0 ? -1 : total);

    bool first_entry = true;
    int64_t frames_written = 0;
    std::set<int64_t> tracked_frames;  // with --reverse, for the overlay made at the end
    auto write_frame = [&](const VideoFrameMasks& result, bool reverse_pass) {
      const int64_t objects = static_cast<int64_t>(result.obj_ids.size());
      const Tensor planes = result.video_res_masks.reshaped({objects, frames.height, frames.width});
      nlohmann::json entry = {{"frame", result.frame_idx}, {"objects", nlohmann::json::array()}};
      if (reverse) entry["pass"] = reverse_pass ? "reverse" : "forward";
      std::vector<UncompressedRle> rles;
      for (int64_t i = 0; i < objects; ++i) {
        const int64_t obj_id = result.obj_ids[static_cast<size_t>(i)];
        const std::vector<uint8_t> mask = threshold_mask(planes, i, 0.0f);
        folder.write(mask_file_name(result.frame_idx, obj_id), encode_png_gray8(mask.data(), frames.width, frames.height));
        UncompressedRle rle = encode_rle(mask.data(), frames.height, frames.width);
        if (json_file) {
          const MaskExtent extent = mask_extent(mask, frames.width, frames.height);
          const FrameOutput* output = predictor.output(obj_id, result.frame_idx);
          entry["objects"].push_back(
              {{"obj_id", obj_id},
               {"area", extent.area},
               {"bbox", extent.bbox},
               {"object_score_logit", output ? nlohmann::json(output->object_score_logit) : nlohmann::json()},
               {"segmentation", {{"size", {rle.height, rle.width}}, {"counts", coco_rle_string(rle)}}}});
        }
        rles.push_back(std::move(rle));
      }
      if (json_file) {
        const std::string text = (first_entry ? "\n  " : ",\n  ") + entry.dump();
        json_file->write(text.data(), text.size());
        first_entry = false;
      }
      if (overlay && !reverse) overlay->write(render_masks_overlay(decoded.frame(result.frame_idx), rles));
      if (reverse) tracked_frames.insert(result.frame_idx);
      ++frames_written;
      if (!quiet) progress.frame_done();
    };

    if (stream) {
      const int64_t wanted = max_frames ? *max_frames + 1 : num_frames;
      try {
        for (int64_t start = 0; start < std::min(wanted, num_frames); start += kStreamFramesPerRun) {
          const int64_t run_frames = std::min(kStreamFramesPerRun, wanted - start);
          VideoPredictor::Propagation run = predictor.propagate_in_video(start, run_frames - 1, false);
          while (std::optional<VideoFrameMasks> result = run.next()) write_frame(*result, false);
        }
      } catch (const StreamEnded&) {
        // The stream's last frame was tracked.
      }
    } else {
      VideoPredictor::Propagation forward = predictor.propagate_in_video(forward_start, max_frames, false);
      while (std::optional<VideoFrameMasks> result = forward.next()) write_frame(*result, false);
    }
    if (reverse) {
      VideoPredictor::Propagation backward = predictor.propagate_in_video(reverse_start, max_frames, true);
      while (std::optional<VideoFrameMasks> result = backward.next()) write_frame(*result, true);
      if (overlay) {
        for (const int64_t f : tracked_frames) {
          std::vector<UncompressedRle> rles;
          for (const int64_t obj_id : predictor.obj_ids()) {
            const RgbImage mask = decode_image_file(folder.path_of(mask_file_name(f, obj_id)));
            std::vector<uint8_t> gray(mask.pixels.size() / 3);
            for (size_t i = 0; i < gray.size(); ++i) gray[i] = mask.pixels[3 * i];
            rles.push_back(encode_rle(gray.data(), mask.height, mask.width));
          }
          overlay->write(render_masks_overlay(decoded.frame(f), rles));
        }
      }
    }
    if (!quiet) progress.finish();

    if (json_file) {
      const std::string tail = "\n ]\n}\n";
      json_file->write(tail.data(), tail.size());
    }
    if (overlay) overlay->finish();
    if (json_file) json_file->commit();
    folder.commit();
    if (!quiet) {
      std::printf("tracked %zu object%s through %lld frames (%.2f frames/s) -> %s\n", predictor.obj_ids().size(),
                  predictor.obj_ids().size() == 1 ? "" : "s", static_cast<long long>(frames_written),
                  progress.frames_per_second(), out_dir.c_str());
    }
  }
};

}  // namespace

void register_track(CLI::App& app) {
  auto command = std::make_shared<TrackCommand>();
  CLI::App* sub = app.add_subcommand(
      "track",
      "Track objects through a video from clicks, boxes or masks.\n"
      "Track objects through a video as SAM2VideoPredictor does: prompt objects on any frames, then propagate "
      "forward from the earliest prompted frame to the end (with --reverse, then also backward from the latest "
      "prompted frame to frame 0, the official notebook's forward-then-reverse pattern: a frame tracked by both "
      "passes keeps the reverse pass's mask). Writes each frame's mask of every object as it is tracked, one "
      "frame in memory at a time, to --out-dir as FRAME_objID.png (00012_obj1.png: 8-bit, 255 = object, "
      "logit > 0, at the video's size).\n"
      "Prompts: FRAME:VALUE, FRAME the frame index (0 = first), coordinates in pixels of the video:\n"
      "  --point F:X,Y[,LABEL]   a click; LABEL 1 = object (default), 0 = background\n"
      "  --box F:X0,Y0,X1,Y1     a box\n"
      "  --mask F:FILE.png       a mask (nonzero = object; any size, resized as the official add_new_mask does)\n"
      "  --obj ID                the object id of the prompts after it (until the next --obj); default 1\n"
      "All points and the box of one object on one frame make one add_new_points_or_box call; a mask and "
      "points cannot share an object and frame. Every prompt is given before tracking starts. E.g. two "
      "objects, the first with two clicks on frame 0 and a background click on frame 30, the second a box on "
      "frame 10:\n"
      "  sam2rt track --model sam2.1_hiera_tiny.pt --video clip.mp4 --out-dir masks \\\n"
      "    --point 0:125,85 --point 0:140,90 --point 30:200,40,0 --obj 7 --box 10:205,70,240,120\n"
      "--video: a folder of JPEG frames (as the official init_state), a video file FFmpeg reads, - for standard "
      "input or a /dev/video* camera (both need --stream).\n"
      "On any error nothing is left in --out-dir (with --stream: the masks this run wrote are removed), and "
      "--json / --overlay-video are not written.");
  command->app = sub;
  command->model.add_to(*sub);
  command->model.add_device_to(*sub);
  sub->add_option("--video", command->video_path, "folder of JPEG frames, video file, - (standard input) or /dev/videoN")
      ->required();
  auto one_per_flag = [](CLI::Option* option) {
    return option->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  one_per_flag(sub->add_option("--point", command->points, "click on a frame: F:X,Y[,LABEL] (LABEL 0 = background)")
                   ->type_name("F:X,Y[,L]"));
  one_per_flag(sub->add_option("--box", command->boxes, "box on a frame: F:X0,Y0,X1,Y1")->type_name("F:X0,Y0,X1,Y1"));
  one_per_flag(
      sub->add_option("--mask", command->masks, "mask PNG on a frame: F:FILE.png (nonzero = object)")->type_name("F:FILE"));
  one_per_flag(sub->add_option("--obj", command->obj_ids, "object id of the prompts that follow (default 1)")
                   ->type_name("ID"));
  sub->add_flag("--reverse", command->reverse,
                "after the forward pass, track backward from the latest prompted frame (or --start-frame) to frame 0");
  sub->add_option("--start-frame", command->start_frame,
                  "frame where both passes start (propagate_in_video's start_frame_idx); default: the earliest "
                  "prompted frame forward, the latest backward")
      ->check(CLI::NonNegativeNumber)
      ->type_name("F");
  sub->add_option("--max-frames", command->max_frames,
                  "track at most N frames after the start frame in each pass (max_frame_num_to_track: N + 1 "
                  "frames in all)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  sub->add_option("--out-dir", command->out_dir, "folder for the mask PNGs (created when missing)")->required();
  sub->add_option("--overlay-video", command->overlay_video_path,
                  "the tracked frames with every object's mask in its own colour, encoded with FFmpeg (H.264 where "
                  "available, else MPEG-4; yuv420p; container from the extension: .mp4, .mkv)");
  sub->add_option("--overlay-fps", command->overlay_fps, "frame rate of --overlay-video")
      ->check(CLI::Range(1, 240))
      ->capture_default_str();
  sub->add_option("--json", command->json_path,
                  "JSON report: the video, model and prompts, then per frame every object's COCO RLE "
                  "(\"segmentation\"), area, bbox [x0, y0, x1, y1) and object_score_logit (with --reverse a frame "
                  "tracked twice is listed twice, \"pass\" telling which; the last entry is final)");
  sub->add_flag("--stream", command->stream,
                "read the frames once, in order, as they arrive (a pipe or a camera, whose length is unknown): "
                "prompts on frame 0 only, each frame's masks written as it is tracked");
  sub->add_flag("--quiet", command->quiet, "no progress line on stderr and no summary");
  sub->callback([command] { command->run(); });
}

}  // namespace sam2rt::cli
