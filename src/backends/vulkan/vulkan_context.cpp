#include "backends/vulkan/vulkan_context.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace sam2rt {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr const char* kUseCpu = "; use --device cpu";

// volk keeps one global table of entry points; it is loaded through the
// instance's dispatch (not per device), so it stays valid for every context,
// but (re)loading it must not race with another context being made.
std::mutex& volk_mutex() {
  static std::mutex mutex;
  return mutex;
}

VKAPI_ATTR VkBool32 VKAPI_CALL log_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT,
                                                      const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                      void* user_data) {
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  static_cast<ValidationLog*>(user_data)->add(std::string("Vulkan validation ") + level + ": " +
                                              (data && data->pMessage ? data->pMessage : "(no message)"));
  return VK_FALSE;
}

bool layer_available(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

std::string version_string(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." + std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

}  // namespace

VulkanContext::VulkanContext(const VulkanContextOptions& options)
    : force_staging_(options.force_staging), validation_log_(options.validation_log) {
  load_vulkan_loader();
  std::lock_guard lock(volk_mutex());
  try {
    uint32_t loader_version = 0;
    if (vkEnumerateInstanceVersion == nullptr || vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS ||
        loader_version < VK_API_VERSION_1_2) {
      throw Error(std::string("no Vulkan device: the Vulkan loader is older than 1.2") + kUseCpu);
    }
    if (options.validation && !layer_available(kValidationLayer)) {
      throw Error(std::string("Vulkan validation layer ") + kValidationLayer +
                  " is not installed (Debian: vulkan-validationlayers)");
    }
    if (options.validation && !validation_log_) validation_log_ = std::make_shared<ValidationLog>();

    auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "sam2rt";
    app.apiVersion = VK_API_VERSION_1_2;
    auto instance_info = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    instance_info.pApplicationInfo = &app;
    const char* layers[] = {kValidationLayer};
    const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    auto messenger_info = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
    messenger_info.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = log_validation_message;
    messenger_info.pUserData = validation_log_.get();
    // Synchronization validation catches a missing barrier between two dispatches.
    VkValidationFeatureEnableEXT enabled_features[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    auto validation_features = vk_struct<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
    validation_features.enabledValidationFeatureCount = 1;
    validation_features.pEnabledValidationFeatures = enabled_features;
    if (options.validation) {
      instance_info.enabledLayerCount = 1;
      instance_info.ppEnabledLayerNames = layers;
      instance_info.enabledExtensionCount = 1;
      instance_info.ppEnabledExtensionNames = extensions;
      // Also catches messages of vkCreateInstance / vkDestroyInstance themselves.
      messenger_info.pNext = &validation_features;
      instance_info.pNext = &messenger_info;
    }
    const VkResult created = vkCreateInstance(&instance_info, nullptr, &instance_);
    if (created != VK_SUCCESS) {
      throw Error(std::string("no Vulkan device: vkCreateInstance failed (") + vk_result_name(created) + ")" + kUseCpu);
    }
    volkLoadInstance(instance_);
    if (options.validation) {
      messenger_info.pNext = nullptr;
      check_vk(vkCreateDebugUtilsMessengerEXT(instance_, &messenger_info, nullptr, &messenger_),
               "vkCreateDebugUtilsMessengerEXT");
    }

    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance_, &count, devices.data());
    if (count == 0) throw Error(std::string("no Vulkan device: the Vulkan loader lists no device") + kUseCpu);
    if (options.device_index < 0 || static_cast<uint32_t>(options.device_index) >= count) {
      throw Error("no Vulkan device: --gpu-index " + std::to_string(options.device_index) + " but " +
                  std::to_string(count) + " device" + (count == 1 ? "" : "s") + " (0.." + std::to_string(count - 1) +
                  ")" + kUseCpu);
    }
    physical_device_ = devices[static_cast<size_t>(options.device_index)];

    auto subgroup = vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto properties = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    properties.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(physical_device_, &properties);
    const VkPhysicalDeviceLimits& limits = properties.properties.limits;
    device_name_ = properties.properties.deviceName;
    limits_.cpu_device = properties.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (properties.properties.apiVersion < VK_API_VERSION_1_2) {
      throw Error("no Vulkan device: " + device_name_ + " supports Vulkan " +
                  version_string(properties.properties.apiVersion) + ", sam2rt needs 1.2" + kUseCpu);
    }
    limits_.max_storage_buffer_range = limits.maxStorageBufferRange;
    limits_.min_storage_buffer_offset_alignment = limits.minStorageBufferOffsetAlignment;
    limits_.max_push_constants_size = limits.maxPushConstantsSize;
    limits_.max_compute_shared_memory = limits.maxComputeSharedMemorySize;
    limits_.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) limits_.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
    limits_.subgroup_size = subgroup.subgroupSize;

    auto features11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    auto features12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    features11.pNext = &features12;
    auto features = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    features.pNext = &features11;
    vkGetPhysicalDeviceFeatures2(physical_device_, &features);
    limits_.shader_float16 = features12.shaderFloat16 == VK_TRUE;
    limits_.storage_buffer_16bit = features11.storageBuffer16BitAccess == VK_TRUE && !options.hide_16bit_storage;
    max_binding_bytes_ = options.max_binding_bytes > 0 && options.max_binding_bytes < limits_.max_storage_buffer_range
                             ? options.max_binding_bytes
                             : limits_.max_storage_buffer_range;
    // The largest shared memory of the tiled kernels: attention_tiled.comp's two
    // tiles of 32 keys x 32 vec4 (matmul_tiled.comp's two 64 x 17 floats are less).
    tiled_kernels_ = (options.force_tiled_kernels || !limits_.cpu_device) &&
                     limits_.max_compute_shared_memory >= 2 * 32 * 32 * 4 * sizeof(float);

    uint32_t family_count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &family_count, families.data());
    bool found = false;
    for (uint32_t i = 0; i < family_count && !found; ++i) {
      if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        queue_family_ = i;
        found = true;
      }
    }
    if (!found) throw Error("no Vulkan device: " + device_name_ + " has no compute queue" + kUseCpu);

    // Only the features the fp16 kernels will use, and only where present.
    auto enable11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    auto enable12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    enable11.pNext = &enable12;
    enable11.storageBuffer16BitAccess = features11.storageBuffer16BitAccess;
    enable12.shaderFloat16 = features12.shaderFloat16;
    const float priority = 1.0f;
    auto queue_info = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    auto device_info = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    device_info.pNext = &enable11;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    const VkResult device_created = vkCreateDevice(physical_device_, &device_info, nullptr, &device_);
    if (device_created != VK_SUCCESS) {
      throw Error("no Vulkan device: cannot open " + device_name_ + " (" + vk_result_name(device_created) + ")" +
                  kUseCpu);
    }
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    vkGetPhysicalDeviceMemoryProperties(physical_device_, &memory_);

    auto pool_info = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool_info.queueFamilyIndex = queue_family_;
    check_vk(vkCreateCommandPool(device_, &pool_info, nullptr, &one_time_pool_), "vkCreateCommandPool");
  } catch (...) {
    destroy();
    throw;
  }
}

VulkanContext::~VulkanContext() {
  std::lock_guard lock(volk_mutex());
  destroy();
}

void VulkanContext::destroy() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    if (one_time_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, one_time_pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
  one_time_pool_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
  messenger_ = VK_NULL_HANDLE;
  instance_ = VK_NULL_HANDLE;
}

uint32_t VulkanContext::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                    VkMemoryPropertyFlags preferred) const {
  for (VkMemoryPropertyFlags wanted : {required | preferred, required}) {
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & wanted) == wanted) return i;
    }
  }
  throw Error("Vulkan: " + device_name_ + " has no suitable memory type for a buffer");
}

bool VulkanContext::memory_type_is_host_visible(uint32_t type) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return (memory_.memoryTypes[type].propertyFlags & host) == host;
}

VkCommandBuffer VulkanContext::begin_once() const {
  auto allocate = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  allocate.commandPool = one_time_pool_;
  allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate.commandBufferCount = 1;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  check_vk(vkAllocateCommandBuffers(device_, &allocate, &commands), "vkAllocateCommandBuffers");
  auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  return commands;
}

void VulkanContext::submit_once(VkCommandBuffer commands) const {
  check_vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  check_vk(vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
  check_vk(vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
  vkFreeCommandBuffers(device_, one_time_pool_, 1, &commands);
}

}  // namespace sam2rt
