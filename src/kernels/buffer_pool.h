#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace sam2rt {

// Recycles large scratch buffers between calls. Fresh memory costs a page fault
// per 4 KiB on first touch (2-11 us on these machines: up to ~70 ms for a 25 MB
// activation), so the encoder takes its activations from a pool and gives them
// back when their last Tensor handle dies.
//
// The pool is one arena of reserved address space carved first-fit, lowest
// address first, with freed neighbours merged: a request of any size can reuse
// memory freed by requests of other sizes, so what the pool holds is about the
// PEAK of what is live at once, not the sum of every intermediate, and after the
// first call the steady state takes no page faults. Memory the pool has touched
// stays with it (not returned to the system) until the pool and every buffer
// from it are gone. When the arena cannot be reserved or is full, buffers come
// from the heap and go back to it. Buffers are NOT zeroed. Thread-safe; a
// buffer may outlive the pool.
class BufferPool {
 public:
  BufferPool();

  // The process's pool, shared by the engine's activations (the CPU backend),
  // per-image state and per-prompt buffers: memory the encoder has given back
  // serves the decoder without touching fresh pages (a one-shot segment-
  // everything with Tiny: 130 MB less). It keeps its peak until the process
  // ends. Copies of a BufferPool share its arena.
  static BufferPool& shared();

  // A float tensor of `shape` on recycled (or new) memory; contents undefined.
  Tensor tensor(Shape shape);
  // Raw memory of at least `bytes` (64-byte aligned), e.g. for bfloat16 data;
  // returned to the pool when the handle dies.
  std::shared_ptr<void> bytes(size_t bytes);

  // Bytes of the arena handed out now, and the most ever touched (the pool's
  // footprint): for tests and reports.
  size_t bytes_in_use() const;
  size_t bytes_reserved() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace sam2rt
