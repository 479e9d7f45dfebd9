#pragma once

// A Vulkan context for one test, with the validation layers on: every
// validation warning or error during the test (including those reported while
// the context is destroyed) fails it. Only in builds with SAM2RT_VULKAN.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/device_buffer.h"
#include "backends/vulkan/vulkan_backend.h"
#include "backends/vulkan/vulkan_context.h"
#include "core/tensor.h"

namespace sam2rt::testing {

#if defined(__SANITIZE_ADDRESS__)
// Debian's validation layer (1.3.239) leaks ~4 KB per instance, which
// LeakSanitizer reports as a failure. The sanitizer pass checks our code
// without it; the regular build runs every Vulkan test with it.
constexpr bool kValidationLayers = false;
#else
constexpr bool kValidationLayers = true;
#endif

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override { open_context({}); }
  void TearDown() override { close_context(); }

  // Replaces the test's context (options.validation and its log are set here).
  void open_context(VulkanContextOptions options) {
    close_context();
    options.validation = kValidationLayers;
    options.validation_log = log_;
    context_ = std::make_unique<VulkanContext>(options);
  }
  void close_context() {
    context_.reset();
    for (const std::string& message : log_->messages()) ADD_FAILURE() << message;
    log_ = std::make_shared<ValidationLog>();
  }

  VulkanContext& context() { return *context_; }

  DeviceBuffer upload(const Tensor& t) {
    DeviceBuffer buffer(*context_, static_cast<uint64_t>(t.numel()) * sizeof(float));
    buffer.upload(t.data(), buffer.bytes());
    return buffer;
  }
  DeviceBuffer zeros(int64_t count) { return upload(Tensor({count})); }
  Tensor download(const DeviceBuffer& buffer, Shape shape) {
    Tensor t(std::move(shape));
    buffer.download(t.data(), static_cast<uint64_t>(t.numel()) * sizeof(float));
    return t;
  }

 private:
  std::shared_ptr<ValidationLog> log_ = std::make_shared<ValidationLog>();
  std::unique_ptr<VulkanContext> context_;
};

// Largest |a - b| over the elements, divided by max(1, largest |b|): the error
// of a device result against the CPU kernel's, on the scale of the values.
// Tests of whole models on a VulkanBackend (encoder, mask decoder): each
// backend reports its validation messages into the test, which fails on any.
class VulkanBackendTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& message : log_->messages()) ADD_FAILURE() << message;
  }
  // A backend with the validation layers reporting into this test.
  std::shared_ptr<VulkanBackend> backend(uint64_t max_binding_bytes = 0, bool tiled_kernels = false) {
    VulkanContextOptions options;
    options.max_binding_bytes = max_binding_bytes;
    options.force_tiled_kernels = tiled_kernels;
    options.validation = kValidationLayers;
    options.validation_log = log_;
    return std::make_shared<VulkanBackend>(options);
  }

 private:
  std::shared_ptr<ValidationLog> log_ = std::make_shared<ValidationLog>();
};

inline double scaled_max_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double error = 0.0, scale = 1.0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    error = std::max(error, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return error / scale;
}

}  // namespace sam2rt::testing
