#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace sam2rt {

// Recycles large scratch buffers between calls. Fresh memory costs a page fault
// per 4 KiB on first touch (~11 us here: ~70 ms for a 25 MB activation), so the
// encoder takes its activations from a pool and gets them back when their last
// Tensor handle dies; after the first encode the steady state allocates nothing.
// Buffers are NOT zeroed. Thread-safe; a buffer may outlive the pool.
class BufferPool {
 public:
  BufferPool();

  // A float tensor of `shape` on a recycled (or new) buffer; contents undefined.
  Tensor tensor(Shape shape);
  // Raw memory of at least `bytes` (64-byte aligned), e.g. for bfloat16 data;
  // returned to the pool when the handle dies.
  std::shared_ptr<void> bytes(size_t bytes);

  // Buffers currently parked in the pool and their total size (for tests).
  size_t idle_buffers() const;
  size_t idle_bytes() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace sam2rt
