#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backends/vulkan/vulkan_context.h"

namespace sam2rt {

// One compute shader made ready to dispatch: its shader module, a descriptor
// set layout of `bindings` storage buffers (bindings 0..n-1 of set 0), and a
// push-constant block of `push_constant_bytes`. Built once per model. Not
// copyable; must not outlive its context.
class ComputePipeline {
 public:
  ComputePipeline(const VulkanContext& context, std::string name, std::span<const uint32_t> spirv,
                  uint32_t bindings, uint32_t push_constant_bytes);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  const std::string& name() const { return name_; }
  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  uint32_t bindings() const { return bindings_; }
  uint32_t push_constant_bytes() const { return push_constant_bytes_; }

 private:
  void destroy();

  const VulkanContext& context_;
  std::string name_;
  uint32_t bindings_ = 0, push_constant_bytes_ = 0;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace sam2rt
