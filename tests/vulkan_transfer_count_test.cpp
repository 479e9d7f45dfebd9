// Backend::transfers on the Vulkan backend (lavapipe in CI, validation on):
// the activations written and downloaded are counted, what is made resident
// at load (constants, Linear weights, persistent tensors) is not.
#ifdef SAM2RT_VULKAN

#include <gtest/gtest.h>

#include "random_tensor.h"
#include "vulkan_test_context.h"

namespace sam2rt::testing {
namespace {

using VulkanTransferCounts = VulkanBackendTest;

// Load-time residency, then two uploads and one download of activations.
void transfer_some(Backend& backend) {
  backend.constant(random_tensor({8}, 1));
  backend.linear(random_tensor({4, 8}, 2), random_tensor({4}, 3), Precision::fp32);
  backend.persistent({16});
  const DeviceTensor x = backend.tensor({8});
  backend.write(x, random_tensor({8}, 4));
  backend.input(random_tensor({8}, 5));
  backend.download(x);
}

TEST_F(VulkanTransferCounts, CountsActivationsNotWhatLoadMakesResident) {
  const auto device = backend();
  EXPECT_EQ(device->transfers().uploads, 0);
  EXPECT_EQ(device->transfers().downloads, 0);
  transfer_some(*device);
  EXPECT_EQ(device->transfers().uploads, 2);
  EXPECT_EQ(device->transfers().downloads, 1);
}

}  // namespace
}  // namespace sam2rt::testing

#endif
