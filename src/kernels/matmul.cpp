#include "kernels/matmul.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
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

memory::data_type gemm_type(Precision p) { return p == Precision::bf16 ? memory::data_type::bf16 : memory::data_type::f32; }

}  // namespace

const char* precision_name(Precision precision) { return precision == Precision::bf16 ? "bf16" : "fp32"; }

Precision parse_precision(std::string_view name) {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    if (name == precision_name(precision)) return precision;
  }
  throw Error("unknown precision '" + std::string(name) + "': use fp32 or bf16");
}

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
};

struct PackedLinear::Kernels {
  Tensor weight, bias;   // keep the caller's storage alive
  memory plain_weights;  // W^T [in, out] as float32: a strided view of `weight`, no copy
  memory bias_memory;
  std::mutex mutex;
  std::map<std::tuple<int64_t, bool, Epilogue>, Entry> entries;
};

PackedLinear::PackedLinear(const Tensor& weight, const Tensor& bias, Precision precision)
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

const PackedLinear::Entry& PackedLinear::entry(int64_t rows, bool bf16_out, Epilogue epilogue) const {
  Kernels& k = *kernels_;
  const auto key = std::make_tuple(rows, bf16_out, epilogue);
  auto it = k.entries.find(key);
  if (it != k.entries.end()) return it->second;

  dnnl::engine& engine = cpu_engine();
  const memory::data_type type = gemm_type(precision_);
  const memory::desc src({rows, in_}, type, memory::format_tag::ab);
  // float32 reads the weights where they are: a blocked copy measured < 2% faster
  // on the Tiny encoder, not worth a second copy of every weight in memory nor
  // the time to make it at load. bfloat16 needs a converted copy anyway, so that
  // one goes straight into the layout the primitive likes.
  const memory::desc weights = precision_ == Precision::fp32
                                   ? k.plain_weights.get_desc()
                                   : memory::desc({in_, out_}, type, memory::format_tag::any);
  const memory::desc dst({rows, out_}, bf16_out ? memory::data_type::bf16 : memory::data_type::f32,
                         memory::format_tag::ab);
  dnnl::post_ops post_ops;
  if (epilogue == Epilogue::gelu) post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  if (epilogue == Epilogue::accumulate) post_ops.append_sum(1.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);
  const dnnl::matmul::desc desc = k.bias_memory ? dnnl::matmul::desc(src, weights, k.bias_memory.get_desc(), dst)
                                                : dnnl::matmul::desc(src, weights, dst);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(desc, attr, engine);
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN cannot run a ") + precision_name(precision_) + " matmul on this CPU (" + e.what() +
                ")" + (precision_ == Precision::bf16 ? "; bf16 needs AVX-512: use --precision fp32" : ""));
  }

  Entry entry{dnnl::matmul(pd), memory()};
  if (pd.weights_desc() == k.plain_weights.get_desc()) entry.weights = k.plain_weights;
  // Entries with the same weight layout share one converted copy.
  for (const auto& [other_key, other] : k.entries) {
    if (!entry.weights && other.weights.get_desc() == pd.weights_desc()) entry.weights = other.weights;
  }
  if (!entry.weights) {
    entry.weights = memory(pd.weights_desc(), engine);
    dnnl::reorder(k.plain_weights, entry.weights).execute(thread_stream(), k.plain_weights, entry.weights);
    thread_stream().wait();
  }
  return k.entries.emplace(key, std::move(entry)).first->second;
}

void PackedLinear::run(const void* x, int64_t rows, void* y, bool bf16_out, Epilogue epilogue) const {
  if (!kernels_) throw Error("linear: layer used before it was built");
  if (rows == 0) return;
  const Entry* e = nullptr;
  {
    std::lock_guard lock(kernels_->mutex);
    e = &entry(rows, bf16_out, epilogue);
  }
  dnnl::engine& engine = cpu_engine();
  const memory::data_type type = gemm_type(precision_);
  memory src({{rows, in_}, type, memory::format_tag::ab}, engine, const_cast<void*>(x));
  memory dst({{rows, out_}, bf16_out ? memory::data_type::bf16 : memory::data_type::f32, memory::format_tag::ab},
             engine, y);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, e->weights}, {DNNL_ARG_DST, dst}};
  if (kernels_->bias_memory) args.emplace(DNNL_ARG_BIAS, kernels_->bias_memory);
  e->primitive.execute(thread_stream(), args);
  thread_stream().wait();
}

void PackedLinear::forward(const float* x, int64_t rows, float* y, Epilogue epilogue) const {
  if (precision_ != Precision::fp32) throw Error("linear: a bf16 layer needs bfloat16 input");
  run(x, rows, y, false, epilogue);
}

void PackedLinear::forward(const uint16_t* x, int64_t rows, float* y, Epilogue epilogue) const {
  if (precision_ != Precision::bf16) throw Error("linear: an fp32 layer needs float input");
  run(x, rows, y, false, epilogue);
}

void PackedLinear::forward(const uint16_t* x, int64_t rows, uint16_t* y, Epilogue epilogue) const {
  if (precision_ != Precision::bf16) throw Error("linear: an fp32 layer needs float input");
  run(x, rows, y, true, epilogue);
}

}  // namespace sam2rt
