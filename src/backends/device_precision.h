#pragma once

namespace sam2rt {

// How a device backend stores weights and activations (docs/BACKENDS.md,
// Precision): fp32, the exact path, or fp16, half the memory and bandwidth, with
// every product, sum, softmax and LayerNorm statistic still computed in fp32.
enum class DevicePrecision { fp32, fp16 };

}  // namespace sam2rt
