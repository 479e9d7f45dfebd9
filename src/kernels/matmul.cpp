#include "kernels/matmul.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/error.h"

namespace sam2rt {

namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// Memory each thread keeps for its own use, at least `bytes` long, aligned to a
// page; kept for the thread's lifetime and only ever grown: oneDNN's scratchpad,
// and the hidden activations of an MLP's row chunk.
enum class ThreadBuffer { scratchpad, mlp_hidden, count };

void* thread_buffer(ThreadBuffer which, size_t bytes) {
  constexpr size_t kAlignment = 4096;
  struct AlignedFree {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlignment}); }
  };
  constexpr auto kBuffers = static_cast<size_t>(ThreadBuffer::count);
  thread_local std::array<std::unique_ptr<std::byte[], AlignedFree>, kBuffers> buffers;
  thread_local std::array<size_t, kBuffers> sizes{};
  const auto slot = static_cast<size_t>(which);
  if (bytes > sizes[slot]) {
    buffers[slot].reset(new (std::align_val_t{kAlignment}) std::byte[bytes]);
    sizes[slot] = bytes;
  }
  return buffers[slot].get();
}

memory::data_type gemm_type(MatmulPrecision p) {
  return p == MatmulPrecision::bf16 ? memory::data_type::bf16 : memory::data_type::f32;
}

size_t element_bytes(memory::data_type type) { return type == memory::data_type::f32 ? 4 : 2; }

// Large GEMMs are split into row chunks handed out to the OpenMP threads one at
// a time (schedule dynamic), each chunk a single-threaded primitive. oneDNN's
// own split is static: with another busy thread on the machine, the thread that
// shares its core runs at half speed and its partner waits for it at the end of
// every GEMM. About this many chunks per thread; none smaller than the minimum,
// all but the last a multiple of kChunkRowsMultiple (oneDNN's row blocks).
constexpr int64_t kChunksPerThread = 8;
constexpr int64_t kMinChunkRows = 64;
constexpr int64_t kChunkRowsMultiple = 32;

// Rows per chunk for `rows` rows on `threads` threads, or 0 when the GEMM is
// too small to be worth splitting (oneDNN's own parallel split is used then).
int64_t chunk_rows(int64_t rows, int threads) {
  if (threads < 2) return 0;
  const int64_t target = (rows + threads * kChunksPerThread - 1) / (threads * kChunksPerThread);
  const int64_t chunk =
      std::max(kMinChunkRows, (target + kChunkRowsMultiple - 1) / kChunkRowsMultiple * kChunkRowsMultiple);
  return rows >= 2 * threads * chunk ? chunk : 0;
}

// Runs body(first_row, rows) for every chunk of `chunk` rows (the last one
// shorter) on the OpenMP threads, handed out one at a time; the first exception
// a chunk throws is rethrown once all have run.
template <typename Body>
void for_each_row_chunk(int64_t rows, int64_t chunk, Body body) {
  const int64_t chunks = (rows + chunk - 1) / chunk;
  std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    try {
      body(c * chunk, std::min(chunk, rows - c * chunk));
    } catch (...) {
#pragma omp critical(row_chunk_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// oneDNN sizes a primitive's work split for the OpenMP thread count in effect
// when it is made; a chunk's primitive is made with that count set to 1 for the
// calling thread, and it is restored on the way out.
class OneThreadForPrimitives {
 public:
  OneThreadForPrimitives() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThreadForPrimitives() { omp_set_num_threads(saved_); }
  OneThreadForPrimitives(const OneThreadForPrimitives&) = delete;
  OneThreadForPrimitives& operator=(const OneThreadForPrimitives&) = delete;

 private:
  int saved_;
};

const char* precision_name(MatmulPrecision precision) { return precision == MatmulPrecision::bf16 ? "bf16" : "fp32"; }

}  // namespace

bool bf16_matmul_supported() {
  static const bool supported = [] {
    const memory::desc a({1, 2}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc b({2, 2}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc c({1, 2}, memory::data_type::f32, memory::format_tag::ab);
    try {
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

struct PackedLinear::Entry {
  dnnl::matmul primitive;
  memory weights;  // in the primitive's layout
  memory::desc scratchpad;
};

struct PackedLinear::Kernels {
  Tensor weight, bias;   // keep the caller's storage alive
  memory plain_weights;  // W^T [in, out] as float32: a strided view of `weight`, no copy
  memory bias_memory;
  std::mutex mutex;
  // Key: rows, bfloat16 output, epilogue, made for one thread (a row chunk).
  std::map<std::tuple<int64_t, bool, MatmulEpilogue, bool>, Entry> entries;
};

PackedLinear::PackedLinear(const Tensor& weight, const Tensor& bias, MatmulPrecision precision)
    : precision_(precision), kernels_(std::make_shared<Kernels>()) {
  if (weight.rank() != 2) throw Error("linear: weight must be [out, in], got " + shape_to_string(weight.shape()));
  out_ = weight.dim(0);
  in_ = weight.dim(1);
  if (!bias.empty() && bias.numel() != out_) {
    throw Error("linear: bias " + shape_to_string(bias.shape()) + " does not match weight " +
                shape_to_string(weight.shape()));
  }
  dnnl::engine& engine = cpu_engine();
  kernels_->weight = weight;
  kernels_->bias = bias;
  // W^T as an [in, out] matrix with strides (1, in): the [out, in] tensor as is.
  kernels_->plain_weights = memory({{in_, out_}, memory::data_type::f32, memory::dims{1, in_}}, engine,
                                   const_cast<float*>(weight.data()));
  if (!bias.empty()) {
    kernels_->bias_memory = memory({{1, out_}, memory::data_type::f32, memory::format_tag::ab}, engine,
                                   const_cast<float*>(bias.data()));
  }
}

const PackedLinear::Entry& PackedLinear::entry(int64_t rows, bool bf16_out, MatmulEpilogue epilogue,
                                               bool one_thread) const {
  Kernels& k = *kernels_;
  const auto key = std::make_tuple(rows, bf16_out, epilogue, one_thread);
  auto it = k.entries.find(key);
  if (it != k.entries.end()) return it->second;
  std::optional<OneThreadForPrimitives> one_thread_scope;
  if (one_thread) one_thread_scope.emplace();

  dnnl::engine& engine = cpu_engine();
  const memory::data_type type = gemm_type(precision_);
  const memory::desc src({rows, in_}, type, memory::format_tag::ab);
  // A whole float32 GEMM reads the weights where they are. A row chunk's
  // primitive would copy (transpose) all of them on every call, which made the
  // chunked GEMMs slower than oneDNN's own split, so chunks read one blocked
  // copy, made on first use (Tiny fp32: +88 MB peak RSS; measured faster than
  // the plain weights also with the machine to ourselves). bfloat16 needs a
  // converted copy anyway, so that one goes straight into the layout the
  // primitive likes.
  const memory::desc weights = precision_ == MatmulPrecision::fp32 && !one_thread
                                   ? k.plain_weights.get_desc()
                                   : memory::desc({in_, out_}, type, memory::format_tag::any);
  const memory::desc dst({rows, out_}, bf16_out ? memory::data_type::bf16 : memory::data_type::f32,
                         memory::format_tag::ab);
  dnnl::post_ops post_ops;
  if (epilogue == MatmulEpilogue::gelu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  if (epilogue == MatmulEpilogue::accumulate) post_ops.append_sum(1.0f);
  if (epilogue == MatmulEpilogue::relu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);
  // oneDNN's own scratchpad belongs to the thread that made the primitive; the
  // row chunks run one primitive on several threads at once, so every call
  // brings its thread's own (thread_buffer).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::desc desc = k.bias_memory ? dnnl::matmul::desc(src, weights, k.bias_memory.get_desc(), dst)
                                                : dnnl::matmul::desc(src, weights, dst);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(desc, attr, engine);
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN cannot run a ") + precision_name(precision_) + " matmul on this CPU (" + e.what() +
                ")" + (precision_ == MatmulPrecision::bf16 ? "; bf16 needs AVX-512: use --precision fp32" : ""));
  }

  Entry entry{dnnl::matmul(pd), memory(), pd.scratchpad_desc()};
  if (pd.weights_desc() == k.plain_weights.get_desc()) entry.weights = k.plain_weights;
  // Entries with the same weight layout share one converted copy.
  for (const auto& [other_key, other] : k.entries) {
    if (!entry.weights && other.weights.get_desc() == pd.weights_desc()) entry.weights = other.weights;
  }
  // The copy in the primitive's layout is made with every thread the caller
  // has, not the chunk's one: its fresh pages fault in on first use (Tiny fp32:
  // 88 MB, ~120 ms on one thread of a Zen 3, ~90 ms on two).
  one_thread_scope.reset();
  if (!entry.weights) {
    entry.weights = memory(pd.weights_desc(), engine);
    dnnl::reorder(k.plain_weights, entry.weights).execute(thread_stream(), k.plain_weights, entry.weights);
    thread_stream().wait();
  }
  return k.entries.emplace(key, std::move(entry)).first->second;
}

void PackedLinear::run(const void* x, int64_t rows, void* y, bool bf16_out, MatmulEpilogue epilogue) const {
  if (!kernels_) throw Error("linear: layer used before it was built");
  if (rows == 0) return;
  const int64_t chunk = omp_in_parallel() ? 0 : chunk_rows(rows, omp_get_max_threads());
  if (chunk == 0) {
    const Entry* whole = nullptr;
    {
      std::lock_guard lock(kernels_->mutex);
      whole = &entry(rows, bf16_out, epilogue, false);
    }
    run_rows(*whole, x, rows, y, bf16_out);
    return;
  }
  const auto [full, last] = chunk_entries(rows, chunk, bf16_out, epilogue);
  const size_t x_row_bytes = static_cast<size_t>(in_) * element_bytes(gemm_type(precision_));
  const size_t y_row_bytes = static_cast<size_t>(out_) * (bf16_out ? 2 : 4);
  for_each_row_chunk(rows, chunk, [&](int64_t first_row, int64_t n) {
    const auto first = static_cast<size_t>(first_row);
    run_rows(n == chunk ? *full : *last, static_cast<const char*>(x) + first * x_row_bytes, n,
             static_cast<char*>(y) + first * y_row_bytes, bf16_out);
  });
}

std::pair<const PackedLinear::Entry*, const PackedLinear::Entry*> PackedLinear::chunk_entries(
    int64_t rows, int64_t chunk, bool bf16_out, MatmulEpilogue epilogue) const {
  const int64_t tail = rows - (rows - 1) / chunk * chunk;
  std::lock_guard lock(kernels_->mutex);
  return {&entry(chunk, bf16_out, epilogue, true), &entry(tail, bf16_out, epilogue, true)};
}

void PackedLinear::run_rows(const Entry& e, const void* x, int64_t rows, void* y, bool bf16_out) const {
  dnnl::engine& engine = cpu_engine();
  const memory::data_type type = gemm_type(precision_);
  memory src({{rows, in_}, type, memory::format_tag::ab}, engine, const_cast<void*>(x));
  memory dst({{rows, out_}, bf16_out ? memory::data_type::bf16 : memory::data_type::f32, memory::format_tag::ab},
             engine, y);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, dst}};
  if (kernels_->bias_memory) args.emplace(DNNL_ARG_BIAS, kernels_->bias_memory);
  if (e.scratchpad.get_size() > 0) {
    void* scratchpad = thread_buffer(ThreadBuffer::scratchpad, e.scratchpad.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine, scratchpad));
  }
  e.primitive.execute(thread_stream(), args);
  thread_stream().wait();
}

void PackedLinear::forward_on_this_thread(const void* x, int64_t rows, float* y) const {
  if (!kernels_) throw Error("linear: layer used before it was built");
  if (rows == 0) return;
  const Entry* chunk = nullptr;
  {
    std::lock_guard lock(kernels_->mutex);
    chunk = &entry(rows, false, MatmulEpilogue::none, true);
  }
  run_rows(*chunk, x, rows, y, false);
}

void PackedLinear::forward(const float* x, int64_t rows, float* y, MatmulEpilogue epilogue) const {
  if (precision_ != MatmulPrecision::fp32) throw Error("linear: a bf16 layer needs bfloat16 input");
  run(x, rows, y, false, epilogue);
}

void PackedLinear::forward(const uint16_t* x, int64_t rows, float* y, MatmulEpilogue epilogue) const {
  if (precision_ != MatmulPrecision::bf16) throw Error("linear: an fp32 layer needs float input");
  run(x, rows, y, false, epilogue);
}

void PackedLinear::forward(const uint16_t* x, int64_t rows, uint16_t* y, MatmulEpilogue epilogue) const {
  if (precision_ != MatmulPrecision::bf16) throw Error("linear: an fp32 layer needs float input");
  run(x, rows, y, true, epilogue);
}

void mlp_forward(const PackedLinear& expand, const PackedLinear& contract, const void* x, int64_t rows, float* y) {
  if (!expand.kernels_ || !contract.kernels_) throw Error("mlp: layer used before it was built");
  if (contract.in_ != expand.out_ || contract.precision_ != expand.precision_) {
    throw Error("mlp: the second layer takes " + std::to_string(contract.in_) + " " +
                precision_name(contract.precision_) + " features, the first gives " + std::to_string(expand.out_) +
                " " + precision_name(expand.precision_));
  }
  if (rows == 0) return;
  const bool bf16_hidden = expand.precision_ == MatmulPrecision::bf16;
  const size_t hidden_row_bytes = static_cast<size_t>(expand.out_) * (bf16_hidden ? 2 : 4);
  const int64_t chunk = omp_in_parallel() ? 0 : chunk_rows(rows, omp_get_max_threads());
  if (chunk == 0) {
    void* hidden = thread_buffer(ThreadBuffer::mlp_hidden, static_cast<size_t>(rows) * hidden_row_bytes);
    expand.run(x, rows, hidden, bf16_hidden, MatmulEpilogue::gelu);
    contract.run(hidden, rows, y, false, MatmulEpilogue::accumulate);
    return;
  }
  // The chunks are those each layer's forward would make alone, so are the bits.
  const auto [expand_full, expand_last] = expand.chunk_entries(rows, chunk, bf16_hidden, MatmulEpilogue::gelu);
  const auto [contract_full, contract_last] = contract.chunk_entries(rows, chunk, false, MatmulEpilogue::accumulate);
  const size_t x_row_bytes = static_cast<size_t>(expand.in_) * element_bytes(gemm_type(expand.precision_));
  const size_t y_row_bytes = static_cast<size_t>(contract.out_) * sizeof(float);
  for_each_row_chunk(rows, chunk, [&](int64_t first_row, int64_t n) {
    const auto first = static_cast<size_t>(first_row);
    void* hidden = thread_buffer(ThreadBuffer::mlp_hidden, static_cast<size_t>(chunk) * hidden_row_bytes);
    expand.run_rows(n == chunk ? *expand_full : *expand_last, static_cast<const char*>(x) + first * x_row_bytes, n,
                    hidden, bf16_hidden);
    contract.run_rows(n == chunk ? *contract_full : *contract_last, hidden, n,
                      reinterpret_cast<char*>(y) + first * y_row_bytes, false);
  });
}

}  // namespace sam2rt
