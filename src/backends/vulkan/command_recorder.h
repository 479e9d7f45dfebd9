#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "backends/vulkan/compute_pipeline.h"
#include "backends/vulkan/device_buffer.h"

namespace sam2rt {

// Records dispatches into one command buffer, each with its own descriptor set
// (its buffer ranges) and push constants, and a barrier after each one so the
// next sees its writes. submit() runs the recording and waits for it; calling
// it again replays the same recording (new inputs uploaded into the same
// buffers in between), which is how an encode is meant to run: recorded once
// per model, replayed per image. reset() starts a new recording.
// Used from one thread; every buffer and pipeline it names must outlive it.
class CommandRecorder {
 public:
  explicit CommandRecorder(const VulkanContext& context);
  ~CommandRecorder();
  CommandRecorder(const CommandRecorder&) = delete;
  CommandRecorder& operator=(const CommandRecorder&) = delete;

  // Binds `bindings` to bindings 0..n-1 of the pipeline. Error when a range is
  // empty, outside its buffer, misaligned, or larger than the context's
  // max_binding_bytes (a kernel splits such operands itself), when the push
  // constants do not match the pipeline's block, or the group counts exceed the
  // device's. Not allowed once the recording has been submitted.
  void dispatch(const ComputePipeline& pipeline, std::initializer_list<BufferRange> bindings, const void* push,
                size_t push_bytes, std::array<uint32_t, 3> groups);
  template <class Push>
  void dispatch(const ComputePipeline& pipeline, std::initializer_list<BufferRange> bindings, const Push& push,
                std::array<uint32_t, 3> groups) {
    dispatch(pipeline, bindings, &push, sizeof(Push), groups);
  }

  size_t dispatch_count() const { return dispatches_; }
  // Ends the recording on the first call, then runs it and waits.
  void submit();
  void reset();

 private:
  void begin();
  VkDescriptorSet allocate_set(const ComputePipeline& pipeline);
  void release();

  const VulkanContext& context_;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> descriptor_pools_;
  size_t dispatches_ = 0;
  bool ended_ = false;
};

}  // namespace sam2rt
