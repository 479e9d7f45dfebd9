#include "checkpoint_catalog.h"

#include <array>
#include <string>

#include "core/error.h"

namespace sam2rt::cli {

namespace {

constexpr std::array kOfficialCheckpoints{
    OfficialCheckpoint{"tiny", "sam2.1_hiera_tiny.pt",
                       "https://dl.fbaipublicfiles.com/segment_anything_2/092824/sam2.1_hiera_tiny.pt"},
    OfficialCheckpoint{"small", "sam2.1_hiera_small.pt",
                       "https://dl.fbaipublicfiles.com/segment_anything_2/092824/sam2.1_hiera_small.pt"},
    OfficialCheckpoint{"base_plus", "sam2.1_hiera_base_plus.pt",
                       "https://dl.fbaipublicfiles.com/segment_anything_2/092824/sam2.1_hiera_base_plus.pt"},
    OfficialCheckpoint{"large", "sam2.1_hiera_large.pt",
                       "https://dl.fbaipublicfiles.com/segment_anything_2/092824/sam2.1_hiera_large.pt"},
};

}  // namespace

std::span<const OfficialCheckpoint> official_checkpoints() { return kOfficialCheckpoints; }

const OfficialCheckpoint& official_checkpoint(std::string_view variant) {
  std::string known;
  for (const OfficialCheckpoint& checkpoint : kOfficialCheckpoints) {
    if (checkpoint.variant == variant) return checkpoint;
    known.append(known.empty() ? "" : ", ").append(checkpoint.variant);
  }
  throw Error("unknown variant '" + std::string(variant) + "' (known: " + known + ")");
}

}  // namespace sam2rt::cli
