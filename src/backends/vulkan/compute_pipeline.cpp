#include "backends/vulkan/compute_pipeline.h"

#include <vector>

#include "core/error.h"

namespace sam2rt {

ComputePipeline::ComputePipeline(const VulkanContext& context, std::string name, std::span<const uint32_t> spirv,
                                 uint32_t bindings, uint32_t push_constant_bytes)
    : context_(context), name_(std::move(name)), bindings_(bindings), push_constant_bytes_(push_constant_bytes) {
  if (push_constant_bytes > context.limits().max_push_constants_size) {
    throw Error("Vulkan: shader '" + name_ + "' needs " + std::to_string(push_constant_bytes) +
                " bytes of push constants, " + context.device_name() + " allows " +
                std::to_string(context.limits().max_push_constants_size));
  }
  const VkDevice device = context.device();
  try {
    auto module_info = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    module_info.codeSize = spirv.size_bytes();
    module_info.pCode = spirv.data();
    check_vk(vkCreateShaderModule(device, &module_info, nullptr, &module_), "vkCreateShaderModule(" + name_ + ")");

    std::vector<VkDescriptorSetLayoutBinding> layout_bindings(bindings);
    for (uint32_t i = 0; i < bindings; ++i) {
      layout_bindings[i].binding = i;
      layout_bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      layout_bindings[i].descriptorCount = 1;
      layout_bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    auto set_info = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    set_info.bindingCount = bindings;
    set_info.pBindings = layout_bindings.data();
    check_vk(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");

    const VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
    auto layout_info = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = push_constant_bytes > 0 ? 1 : 0;
    layout_info.pPushConstantRanges = &push_range;
    check_vk(vkCreatePipelineLayout(device, &layout_info, nullptr, &layout_), "vkCreatePipelineLayout");

    auto pipeline_info = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module_;
    pipeline_info.stage.pName = "main";
    pipeline_info.layout = layout_;
    check_vk(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline_),
             "vkCreateComputePipelines(" + name_ + ")");
  } catch (...) {
    destroy();
    throw;
  }
}

ComputePipeline::~ComputePipeline() { destroy(); }

void ComputePipeline::destroy() {
  const VkDevice device = context_.device();
  if (pipeline_ != VK_NULL_HANDLE) vkDestroyPipeline(device, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(device, layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device, set_layout_, nullptr);
  if (module_ != VK_NULL_HANDLE) vkDestroyShaderModule(device, module_, nullptr);
  pipeline_ = VK_NULL_HANDLE;
  layout_ = VK_NULL_HANDLE;
  set_layout_ = VK_NULL_HANDLE;
  module_ = VK_NULL_HANDLE;
}

}  // namespace sam2rt
