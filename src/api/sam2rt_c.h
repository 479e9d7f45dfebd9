/* sam2rt C API: load a SAM 2.1 model, set an image, predict masks.
 * Every function that can fail returns NULL or a nonzero status; the reason is
 * then available from sam2rt_last_error() (per thread, valid until the next call).
 * NULL handles and out-of-range arguments are reported the same way, never a crash. */
#ifndef SAM2RT_C_H
#define SAM2RT_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sam2rt_model sam2rt_model;
typedef struct sam2rt_predictor sam2rt_predictor;

typedef struct sam2rt_masks {
  int32_t num_masks;  /* M: 3 with multimask, else 1 */
  int32_t width;      /* original image width */
  int32_t height;     /* original image height */
  float* logits;      /* [M, height, width]; the mask is logits > the predictor's mask_threshold (0 by default) */
  float iou_predictions[3];
  float object_score_logit;
} sam2rt_masks;

/* What SAM2ImagePredictor takes besides the model. */
typedef struct sam2rt_predictor_options {
  float mask_threshold;      /* logit threshold of a mask; the filling below compares against it */
  double max_hole_area;      /* background components of at most this many low-res pixels are filled (0: off) */
  double max_sprinkle_area;  /* foreground components of at most this many low-res pixels are removed (0: off) */
} sam2rt_predictor_options;

const char* sam2rt_last_error(void);
/* The library's version, "MAJOR.MINOR.PATCH". */
const char* sam2rt_version(void);

/* variant: "tiny", "small", "base_plus" or "large"; config_yaml may be NULL. */
sam2rt_model* sam2rt_model_load(const char* checkpoint_path, const char* variant, const char* config_yaml);
sam2rt_model* sam2rt_model_synthetic(uint64_t salt, const char* variant, const char* config_yaml);
/* As the two above, with the image encoder on `device`: "cpu", "vulkan" (the first Vulkan
 * device) or "vulkan:N"; NULL is "cpu". The prompt encoder and mask decoder run on the CPU,
 * reading the features downloaded from the device. Fails (NULL) for another name or when the
 * device cannot be used (no Vulkan driver, no such GPU). */
sam2rt_model* sam2rt_model_load_on_device(const char* checkpoint_path, const char* variant, const char* config_yaml,
                                          const char* device);
sam2rt_model* sam2rt_model_synthetic_on_device(uint64_t salt, const char* variant, const char* config_yaml,
                                               const char* device);
void sam2rt_model_free(sam2rt_model* model);

/* The official defaults: threshold 0, no filling. */
sam2rt_predictor_options sam2rt_predictor_options_default(void);
/* The predictor holds its own reference to the model: sam2rt_model_free may come first. */
sam2rt_predictor* sam2rt_predictor_new(const sam2rt_model* model);
/* options: NULL for the defaults. */
sam2rt_predictor* sam2rt_predictor_new_with_options(const sam2rt_model* model, const sam2rt_predictor_options* options);
void sam2rt_predictor_free(sam2rt_predictor* predictor);
int sam2rt_predictor_set_image_file(sam2rt_predictor* predictor, const char* path);
/* rgb: width*height*3 bytes, row-major, interleaved */
int sam2rt_predictor_set_image_rgb(sam2rt_predictor* predictor, const uint8_t* rgb, int32_t width, int32_t height);
/* Size of the current image (also after sam2rt_predictor_set_features_file). */
int sam2rt_predictor_image_size(const sam2rt_predictor* predictor, int32_t* width, int32_t* height);

/* Writes the current image's features in the format of `sam2rt encode --decoder-ready`
 * (safetensors, written atomically). After sam2rt_predictor_set_features_file only the
 * decoder-ready tensors are known, so only those are written; the file reads back the same. */
int sam2rt_predictor_save_features(const sam2rt_predictor* predictor, const char* path);
/* Replaces the image by features saved earlier (by the function above or by
 * `sam2rt encode --decoder-ready`) with the same model architecture.
 * On failure the predictor keeps its previous image. */
int sam2rt_predictor_set_features_file(sam2rt_predictor* predictor, const char* path);

/* points_xy: num_points (x, y) pairs in original-image pixels; labels: 1 object, 0 background;
 * box: NULL or (x0, y0, x1, y1). On success fills *out; release it with sam2rt_masks_free. */
int sam2rt_predict(const sam2rt_predictor* predictor, const float* points_xy, const int32_t* labels,
                   int32_t num_points, const float* box, int32_t multimask, sam2rt_masks* out);
void sam2rt_masks_free(sam2rt_masks* masks);

/* ---- The automatic mask generator ("segment everything") ---- */

typedef struct sam2rt_amg sam2rt_amg;
typedef struct sam2rt_amg_result sam2rt_amg_result;

/* SAM2AutomaticMaskGenerator's parameters under their official names;
 * sam2rt_amg_params_default() gives the official defaults (in the comments). */
typedef struct sam2rt_amg_params {
  int32_t points_per_side;                /* 32; 0 when point_grids are given instead */
  int32_t points_per_batch;               /* 64 */
  double pred_iou_thresh;                 /* 0.8 */
  double stability_score_thresh;          /* 0.95 */
  double stability_score_offset;          /* 1.0 */
  double mask_threshold;                  /* 0.0 */
  double box_nms_thresh;                  /* 0.7 */
  int32_t crop_n_layers;                  /* 0 */
  double crop_nms_thresh;                 /* 0.7 */
  double crop_overlap_ratio;              /* 512 / 1500 */
  int32_t crop_n_points_downscale_factor; /* 1 */
  double min_mask_region_area;            /* 0; the predictor's max_hole_area and max_sprinkle_area */
  int32_t use_m2m;                        /* 0 */
  int32_t multimask_output;               /* 1 */
  /* Custom point grids (with points_per_side 0): num_point_grids grids, one per crop layer;
   * grid i holds point_grid_sizes[i] points; point_grids: all (x, y) pairs in [0, 1], grid after grid. */
  int32_t num_point_grids;                /* 0 */
  const int32_t* point_grid_sizes;        /* NULL; only read by sam2rt_amg_new */
  const double* point_grids;              /* NULL; only read by sam2rt_amg_new */
} sam2rt_amg_params;

/* One record of SAM2AutomaticMaskGenerator.generate(). Its pointers belong to the
 * result and stay valid until sam2rt_amg_result_free. */
typedef struct sam2rt_amg_mask {
  int64_t height;            /* segmentation size: the whole image */
  int64_t width;
  const int64_t* rle_counts; /* COCO uncompressed RLE: column-major runs (x outer, y inner), background first */
  int64_t num_rle_counts;
  const char* coco_rle;      /* the same RLE as pycocotools' compressed "counts" string, NUL-terminated */
  int64_t area;              /* pixels set */
  int64_t bbox[4];           /* x, y, w, h with w, h = last set column/row minus first (as the official code) */
  float predicted_iou;
  float point_coords[2];     /* the prompt point, image pixels */
  float stability_score;
  int64_t crop_box[4];       /* x, y, w, h of the crop the mask came from */
} sam2rt_amg_mask;

/* Called on the generating thread after each batch of prompts: done of total prompts decoded so far. */
typedef void (*sam2rt_amg_progress)(int64_t done, int64_t total, void* user_data);

sam2rt_amg_params sam2rt_amg_params_default(void);
/* Checks params (the error names the first bad one) and copies them; params NULL: the defaults.
 * The generator holds its own reference to the model. */
sam2rt_amg* sam2rt_amg_new(const sam2rt_model* model, const sam2rt_amg_params* params);
void sam2rt_amg_free(sam2rt_amg* amg);
/* All masks of the image in the official order, or NULL on failure. progress may be NULL.
 * One generator may run several images at once (from several threads). */
sam2rt_amg_result* sam2rt_amg_generate_file(const sam2rt_amg* amg, const char* image_path,
                                            sam2rt_amg_progress progress, void* user_data);
/* rgb: width*height*3 bytes, row-major, interleaved */
sam2rt_amg_result* sam2rt_amg_generate_rgb(const sam2rt_amg* amg, const uint8_t* rgb, int32_t width, int32_t height,
                                           sam2rt_amg_progress progress, void* user_data);
/* Number of masks; -1 when result is NULL. */
int64_t sam2rt_amg_result_count(const sam2rt_amg_result* result);
/* Fills *out with mask number index (0 <= index < count). */
int sam2rt_amg_result_get(const sam2rt_amg_result* result, int64_t index, sam2rt_amg_mask* out);
/* Mask number index as height*width bytes, row-major, 1 = set, 0 = not; mask_bytes: the buffer's size, at least height*width. */
int sam2rt_amg_result_decode_mask(const sam2rt_amg_result* result, int64_t index, uint8_t* mask, int64_t mask_bytes);
void sam2rt_amg_result_free(sam2rt_amg_result* result);

/* ---- Video tracking (SAM2VideoPredictor) ---- */

typedef struct sam2rt_video sam2rt_video;

/* The masks of every object on one frame, as SAM2VideoPredictor returns them. */
typedef struct sam2rt_video_masks {
  int64_t frame_idx;
  int32_t num_objects;  /* N: every object prompted so far, in the order of their first prompt */
  int32_t width;        /* the video's width */
  int32_t height;       /* the video's height */
  int64_t* obj_ids;     /* [N] */
  float* logits;        /* video_res_masks [N, height, width]; an object's mask is logits > 0 */
} sam2rt_video_masks;

/* Called on the propagating thread for every tracked frame, in tracking order; masks
 * belong to the library and are valid during the call only. Return 0 to go on,
 * nonzero to stop the propagation there (sam2rt_video_propagate then returns 0). */
typedef int (*sam2rt_video_frame_callback)(const sam2rt_video_masks* masks, void* user_data);

/* init_state(video_path): video_path is a folder of JPEG frames (named by their index,
 * as the official loader reads them) or a video file FFmpeg reads. Frame 0 is encoded
 * now, the others when tracking reaches them. The tracking options are those of
 * build_sam2_video_predictor with apply_postprocessing. The session holds its own
 * reference to the model; one thread at a time may use it. */
sam2rt_video* sam2rt_video_new(const sam2rt_model* model, const char* video_path);
void sam2rt_video_free(sam2rt_video* video);
/* The video's frame count and size; any of the pointers may be NULL. */
int sam2rt_video_info(const sam2rt_video* video, int64_t* num_frames, int32_t* width, int32_t* height);
/* The ids of the objects prompted so far: writes min(*count, capacity) ids and sets *count. */
int sam2rt_video_obj_ids(const sam2rt_video* video, int64_t* obj_ids, int32_t capacity, int32_t* count);
/* add_new_points_or_box: points_xy num_points (x, y) pairs with labels (1 object, 0
 * background), box NULL or (x0, y0, x1, y1); in video pixels, or divided by the video's
 * width and height when normalize_coords is 0. On success fills *out with the frame's masks
 * of every object; release it with sam2rt_video_masks_free. */
int sam2rt_video_add_points_or_box(sam2rt_video* video, int64_t frame_idx, int64_t obj_id, const float* points_xy,
                                   const int32_t* labels, int32_t num_points, const float* box,
                                   int32_t clear_old_points, int32_t normalize_coords, sam2rt_video_masks* out);
/* add_new_mask: mask width*height bytes, row-major, nonzero = object (any size). */
int sam2rt_video_add_mask(sam2rt_video* video, int64_t frame_idx, int64_t obj_id, const uint8_t* mask, int32_t width,
                          int32_t height, sam2rt_video_masks* out);
/* propagate_in_video: start_frame_idx -1 for the first prompted frame, max_frame_num_to_track
 * -1 for the whole video; calls on_frame for every tracked frame. */
int sam2rt_video_propagate(sam2rt_video* video, int64_t start_frame_idx, int64_t max_frame_num_to_track,
                           int32_t reverse, sam2rt_video_frame_callback on_frame, void* user_data);
/* clear_all_prompts_in_frame; out NULL for need_output=False. */
int sam2rt_video_clear_prompts_in_frame(sam2rt_video* video, int64_t frame_idx, int64_t obj_id,
                                        sam2rt_video_masks* out);
/* remove_object with need_output=False (sam2rt_video_obj_ids gives the remaining ids). An
 * unknown id fails when strict is nonzero and changes nothing otherwise. */
int sam2rt_video_remove_object(sam2rt_video* video, int64_t obj_id, int32_t strict);
/* reset_state: every object and prompt removed; the video stays open. */
int sam2rt_video_reset(sam2rt_video* video);
void sam2rt_video_masks_free(sam2rt_video_masks* masks);

#ifdef __cplusplus
}
#endif

#endif /* SAM2RT_C_H */
