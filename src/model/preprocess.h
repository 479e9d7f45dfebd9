#pragma once

#include "core/tensor.h"
#include "io/image.h"

namespace sam2rt {

// The model card's preprocessing, bit for bit: Pillow BILINEAR resize to
// image_size x image_size, then per channel float32 ((x / 255) - mean) / std
// (torchvision ToTensor + Normalize) with the ImageNet mean/std.
// Returns [1, 3, image_size, image_size] (NCHW).
Tensor preprocess_image(const RgbImage& image, int image_size);

// One video frame as the official SAM2VideoPredictor's loader
// (sam2/utils/misc.py, load_video_frames_from_jpg_images with its default
// async_loading_frames=False) prepares it, bit for bit: Pillow
// `resize((image_size, image_size))` with its default filter for RGB images,
// BICUBIC; numpy's uint8 / 255.0 in float64 stored into a float32 tensor; then
// `images -= img_mean; images /= img_std` in float32 with the ImageNet mean/std
// (bit-equal to Meta's loader: tools/refgen/video/check_official_loader.py).
// Frames of video files take the same path once decoded to RGB (the official
// loader lets decord resize inside FFmpeg instead: docs/VIDEO_FRAMES.md).
// Returns [1, 3, image_size, image_size] (NCHW).
Tensor preprocess_video_frame(const RgbImage& frame, int image_size);

}  // namespace sam2rt
