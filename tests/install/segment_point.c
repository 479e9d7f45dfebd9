/* A C program on the installed libsam2rt: checks the library's version, segments an
 * image from one click and writes the result (sizes, scores, logits in native byte
 * order) for compare_with_cpp_api; then saves the image's features, predicts again
 * from the saved file with a second predictor and requires identical masks.
 * usage: segment_point VERSION CHECKPOINT CONFIG_YAML IMAGE RESULT_OUT FEATURES_OUT */
#include <sam2rt_c.h>

#include <stdio.h>
#include <string.h>

static int fail(const char* what) {
  fprintf(stderr, "segment_point: %s: %s\n", what, sam2rt_last_error());
  return 1;
}

static int write_result(const sam2rt_masks* masks, const char* path) {
  const size_t count = (size_t)masks->num_masks * (size_t)masks->width * (size_t)masks->height;
  FILE* out = fopen(path, "wb");
  if (!out) return 1;
  int bad = fwrite(&masks->num_masks, sizeof(int32_t), 1, out) != 1 ||
            fwrite(&masks->width, sizeof(int32_t), 1, out) != 1 ||
            fwrite(&masks->height, sizeof(int32_t), 1, out) != 1 ||
            fwrite(masks->iou_predictions, sizeof(float), 3, out) != 3 ||
            fwrite(&masks->object_score_logit, sizeof(float), 1, out) != 1 ||
            fwrite(masks->logits, sizeof(float), count, out) != count;
  bad |= fclose(out) != 0;
  return bad;
}

static int same_masks(const sam2rt_masks* a, const sam2rt_masks* b) {
  const size_t count = (size_t)a->num_masks * (size_t)a->width * (size_t)a->height;
  return a->num_masks == b->num_masks && a->width == b->width && a->height == b->height &&
         memcmp(a->iou_predictions, b->iou_predictions, sizeof a->iou_predictions) == 0 &&
         memcmp(&a->object_score_logit, &b->object_score_logit, sizeof(float)) == 0 &&
         memcmp(a->logits, b->logits, count * sizeof(float)) == 0;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: segment_point VERSION CHECKPOINT CONFIG_YAML IMAGE RESULT_OUT FEATURES_OUT\n");
    return 2;
  }
  if (strcmp(sam2rt_version(), argv[1]) != 0) {
    fprintf(stderr, "segment_point: library version %s, expected %s\n", sam2rt_version(), argv[1]);
    return 1;
  }
  sam2rt_model* model = sam2rt_model_load(argv[2], NULL, argv[3]);
  if (!model) return fail("loading the model");
  sam2rt_predictor* predictor = sam2rt_predictor_new(model);
  sam2rt_predictor* from_features = sam2rt_predictor_new(model);
  sam2rt_model_free(model); /* the predictors keep their own references */
  if (!predictor || !from_features) return fail("creating the predictors");
  if (sam2rt_predictor_set_image_file(predictor, argv[4]) != 0) return fail("setting the image");

  const float point[2] = {110.0f, 41.0f};
  const int32_t label = 1;
  sam2rt_masks masks;
  if (sam2rt_predict(predictor, point, &label, 1, NULL, 1, &masks) != 0) return fail("predicting");
  if (write_result(&masks, argv[5]) != 0) {
    fprintf(stderr, "segment_point: cannot write %s\n", argv[5]);
    return 1;
  }

  if (sam2rt_predictor_save_features(predictor, argv[6]) != 0) return fail("saving the features");
  if (sam2rt_predictor_set_features_file(from_features, argv[6]) != 0) return fail("reading the features");
  sam2rt_masks again;
  if (sam2rt_predict(from_features, point, &label, 1, NULL, 1, &again) != 0) return fail("predicting from features");
  const int same = same_masks(&masks, &again);
  if (same) printf("segment_point: libsam2rt %s, %d masks of %dx%d\n", sam2rt_version(), (int)masks.num_masks,
                   (int)masks.width, (int)masks.height);
  sam2rt_masks_free(&again);
  sam2rt_masks_free(&masks);
  sam2rt_predictor_free(from_features);
  sam2rt_predictor_free(predictor);
  if (!same) {
    fprintf(stderr, "segment_point: the masks from the saved features differ from the image's\n");
    return 1;
  }
  return 0;
}
