#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sam2rt::cli {

// The files one run writes into an output folder (track's --out-dir), so that
// a failed run leaves none behind. Staged: each file goes to a hidden folder
// inside it and all are moved into place by commit(), so a failure leaves the
// folder as it was. Unstaged (a stream, whose masks are wanted as frames
// arrive): files go straight to their place, and a failure removes those
// this run created. The folder itself is created when missing, and removed
// again on failure when this run created it and left it empty.
class MaskFolder {
 public:
  MaskFolder(const std::string& folder, bool staged);
  ~MaskFolder();
  MaskFolder(const MaskFolder&) = delete;
  MaskFolder& operator=(const MaskFolder&) = delete;

  // Writes `name` (a file name inside the folder); readers never see it half written.
  void write(const std::string& name, const std::vector<uint8_t>& bytes);
  void commit();
  // Where a file written by this run is until commit() (it can be read back).
  std::string path_of(const std::string& name) const;

 private:
  std::filesystem::path folder_;
  std::filesystem::path staging_;  // empty when unstaged
  std::vector<std::filesystem::path> created_;  // the folders this run made, outermost first
  std::vector<std::string> names_;  // staged: every name written; unstaged: those that did not exist before
  bool committed_ = false;
};

}  // namespace sam2rt::cli
