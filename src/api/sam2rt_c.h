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

#ifdef __cplusplus
}
#endif

#endif /* SAM2RT_C_H */
