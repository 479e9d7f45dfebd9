#include "model/heads_image.h"

#include <mutex>
#include <utility>

#include "core/error.h"

namespace sam2rt {

struct HeadsImage::Shared {
  DeviceDecoderFeatures device;
  std::function<DecoderImageState(int threads)> prepare_cpu;  // empty once cpu is made
  std::once_flag cpu_made;
  DecoderImageState cpu;
};

HeadsImage::HeadsImage(DecoderImageState cpu, DeviceDecoderFeatures device) : shared_(std::make_shared<Shared>()) {
  shared_->device = std::move(device);
  shared_->cpu = std::move(cpu);
  std::call_once(shared_->cpu_made, [] {});  // made already: cpu() has nothing left to do
}

HeadsImage::HeadsImage(DeviceDecoderFeatures device, std::function<DecoderImageState(int threads)> prepare_cpu)
    : shared_(std::make_shared<Shared>()) {
  if (!prepare_cpu) throw Error("heads image: no way to prepare the CPU decoder's state");
  shared_->device = std::move(device);
  shared_->prepare_cpu = std::move(prepare_cpu);
}

const DeviceDecoderFeatures& HeadsImage::device() const {
  if (empty()) throw Error("no image set: call set_image or set_features before predicting");
  return shared_->device;
}

const DecoderImageState& HeadsImage::cpu(int threads) const {
  if (empty()) throw Error("no image set: call set_image or set_features before predicting");
  Shared& shared = *shared_;
  std::call_once(shared.cpu_made, [&shared, threads] {
    shared.cpu = shared.prepare_cpu(threads);
    // Drop what it holds (host features, a download's handles) once it has served.
    shared.prepare_cpu = nullptr;
  });
  return shared.cpu;
}

}  // namespace sam2rt
