#include "backends/vulkan/command_recorder.h"

#include <limits>

#include "core/error.h"

namespace sam2rt {

namespace {

// Descriptor sets per pool: a Tiny encode records a few hundred dispatches;
// pools are added as the recording grows.
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kBuffersPerSet = 8;

constexpr VkAccessFlags kShaderAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

}  // namespace

CommandRecorder::CommandRecorder(const VulkanContext& context) : context_(context) {
  try {
    auto pool_info = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = context.queue_family();
    check_vk(vkCreateCommandPool(context.device(), &pool_info, nullptr, &command_pool_), "vkCreateCommandPool");
    auto allocate = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    allocate.commandPool = command_pool_;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    check_vk(vkAllocateCommandBuffers(context.device(), &allocate, &commands_), "vkAllocateCommandBuffers");
    auto fence_info = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check_vk(vkCreateFence(context.device(), &fence_info, nullptr, &fence_), "vkCreateFence");
    begin();
  } catch (...) {
    release();
    throw;
  }
}

CommandRecorder::~CommandRecorder() { release(); }

void CommandRecorder::release() {
  const VkDevice device = context_.device();
  for (VkDescriptorPool pool : descriptor_pools_) vkDestroyDescriptorPool(device, pool, nullptr);
  descriptor_pools_.clear();
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device, fence_, nullptr);
  if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device, command_pool_, nullptr);  // frees commands_
  fence_ = VK_NULL_HANDLE;
  command_pool_ = VK_NULL_HANDLE;
  commands_ = VK_NULL_HANDLE;
}

void CommandRecorder::begin() {
  auto info = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  check_vk(vkBeginCommandBuffer(commands_, &info), "vkBeginCommandBuffer");
  // A replay's first kernels overwrite what the previous run's last ones read,
  // and read what the host or a staged upload wrote since.
  memory_barrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 kShaderAccess);
}

VkDescriptorSet CommandRecorder::allocate_set(const ComputePipeline& pipeline) {
  const VkDescriptorSetLayout layout = pipeline.set_layout();
  auto allocate = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  allocate.descriptorSetCount = 1;
  allocate.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (!descriptor_pools_.empty()) {
    allocate.descriptorPool = descriptor_pools_.back();
    const VkResult result = vkAllocateDescriptorSets(context_.device(), &allocate, &set);
    if (result == VK_SUCCESS) return set;
    if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL) {
      check_vk(result, "vkAllocateDescriptorSets");
    }
  }
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kBuffersPerSet};
  auto pool_info = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pool_info.maxSets = kSetsPerPool;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check_vk(vkCreateDescriptorPool(context_.device(), &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
  descriptor_pools_.push_back(pool);
  allocate.descriptorPool = pool;
  check_vk(vkAllocateDescriptorSets(context_.device(), &allocate, &set), "vkAllocateDescriptorSets");
  return set;
}

void CommandRecorder::dispatch(const ComputePipeline& pipeline, std::initializer_list<BufferRange> bindings,
                               const void* push, size_t push_bytes, std::array<uint32_t, 3> groups) {
  const std::string what = "Vulkan kernel '" + pipeline.name() + "': ";
  if (ended_) throw Error(what + "recorded after the recording was submitted (reset() first)");
  if (bindings.size() != pipeline.bindings() || bindings.size() > kBuffersPerSet) {
    throw Error(what + std::to_string(bindings.size()) + " buffers bound, the shader has " +
                std::to_string(pipeline.bindings()));
  }
  if (push_bytes != pipeline.push_constant_bytes()) {
    throw Error(what + std::to_string(push_bytes) + " bytes of push constants, the shader takes " +
                std::to_string(pipeline.push_constant_bytes()));
  }
  for (int axis = 0; axis < 3; ++axis) {
    if (groups[axis] == 0 || groups[axis] > context_.limits().max_workgroup_count[axis]) {
      throw Error(what + std::to_string(groups[axis]) + " workgroups along axis " + std::to_string(axis) +
                  " (the device allows 1.." + std::to_string(context_.limits().max_workgroup_count[axis]) + ")");
    }
  }
  std::array<VkDescriptorBufferInfo, kBuffersPerSet> infos{};
  std::array<VkWriteDescriptorSet, kBuffersPerSet> writes{};
  const VkDescriptorSet set = allocate_set(pipeline);
  uint32_t i = 0;
  for (const BufferRange& range : bindings) {
    const std::string binding = what + "binding " + std::to_string(i) + " ";
    if (range.buffer == nullptr || range.bytes == 0) throw Error(binding + "is empty");
    if (range.offset > range.buffer->bytes() || range.bytes > range.buffer->bytes() - range.offset) {
      throw Error(binding + "lies outside its buffer");
    }
    if (range.offset % context_.limits().min_storage_buffer_offset_alignment != 0) {
      throw Error(binding + "offset " + std::to_string(range.offset) + " is not a multiple of " +
                  std::to_string(context_.limits().min_storage_buffer_offset_alignment));
    }
    if (range.bytes > context_.max_binding_bytes()) {
      throw Error(binding + "spans " + std::to_string(range.bytes) + " bytes, more than the " +
                  std::to_string(context_.max_binding_bytes()) + " one binding may span on " +
                  context_.device_name());
    }
    infos[i] = {range.buffer->handle(), range.offset, range.bytes};
    writes[i] = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    ++i;
  }
  vkUpdateDescriptorSets(context_.device(), i, writes.data(), 0, nullptr);
  vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
  vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set, 0, nullptr);
  if (push_bytes > 0) {
    vkCmdPushConstants(commands_, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(push_bytes), push);
  }
  vkCmdDispatch(commands_, groups[0], groups[1], groups[2]);
  memory_barrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderAccess);
  ++dispatches_;
}

void CommandRecorder::submit() {
  if (!ended_) {
    // The results are read by the host (mapped) or copied out (staged).
    memory_barrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
    check_vk(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
    ended_ = true;
  }
  auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands_;
  check_vk(vkQueueSubmit(context_.queue(), 1, &submit, fence_), "vkQueueSubmit");
  check_vk(vkWaitForFences(context_.device(), 1, &fence_, VK_TRUE, std::numeric_limits<uint64_t>::max()),
           "vkWaitForFences");
  check_vk(vkResetFences(context_.device(), 1, &fence_), "vkResetFences");
}

void CommandRecorder::reset() {
  check_vk(vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
  for (VkDescriptorPool pool : descriptor_pools_) vkDestroyDescriptorPool(context_.device(), pool, nullptr);
  descriptor_pools_.clear();
  dispatches_ = 0;
  ended_ = false;
  begin();
}

}  // namespace sam2rt
