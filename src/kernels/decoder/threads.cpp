#include "kernels/decoder/threads.h"

#include <omp.h>

#include <algorithm>

namespace sam2rt {

DecoderThreads::DecoderThreads()
    : saved_max_threads_(omp_get_max_threads()), count_(omp_in_parallel() ? 1 : saved_max_threads_) {
  omp_set_num_threads(1);
}

DecoderThreads::~DecoderThreads() { omp_set_num_threads(saved_max_threads_); }

void for_row_blocks(int threads, int64_t rows, int64_t block, const std::function<void(int64_t, int64_t)>& body) {
  const int64_t blocks = (rows + block - 1) / block;
  if (threads <= 1 || blocks <= 1 || omp_in_parallel()) {
    for (int64_t b = 0; b < blocks; ++b) body(b * block, std::min(rows, (b + 1) * block));
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(static_cast<int>(std::min<int64_t>(threads, blocks)))
  for (int64_t b = 0; b < blocks; ++b) body(b * block, std::min(rows, (b + 1) * block));
}

}  // namespace sam2rt
