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

#ifdef __cplusplus
}
#endif

#endif /* SAM2RT_C_H */
