#pragma once

#include <cstdint>
#include <functional>

namespace sam2rt {

// The mask decoder's threading. Its token-sized steps are far too small to share
// between threads: every OpenMP region ends in a barrier, and on a busy machine a
// descheduled worker stalls that barrier for a whole time slice (a decode of a few
// milliseconds took 0.5 s on a loaded 2-core box). So while a DecoderThreads scope
// is alive, every OpenMP region of the calling thread, oneDNN's included, runs on
// one thread, and only the decoder's row-parallel image steps use the `count()`
// threads the caller had, one region per step (for_row_blocks).
class DecoderThreads {
 public:
  DecoderThreads();
  ~DecoderThreads();
  DecoderThreads(const DecoderThreads&) = delete;
  DecoderThreads& operator=(const DecoderThreads&) = delete;

  int count() const { return count_; }

 private:
  int saved_max_threads_;
  int count_;
};

// body(begin, end) over [0, rows) in blocks of `block` rows, shared dynamically by
// `threads` workers in one OpenMP region (serially when threads <= 1 or already
// inside a parallel region). body must not throw.
void for_row_blocks(int threads, int64_t rows, int64_t block, const std::function<void(int64_t, int64_t)>& body);

}  // namespace sam2rt
