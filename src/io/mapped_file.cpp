#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace sam2rt {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw Error("cannot map '" + path + "': " + std::strerror(err));
    }
    file->data_ = static_cast<uint8_t*>(p);
    file->mapped_ = true;
  }
  ::close(fd);
  return file;
}

std::shared_ptr<MappedFile> MappedFile::from_bytes(std::vector<uint8_t> bytes, const std::string& path) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->owned_ = std::move(bytes);
  file->size_ = file->owned_.size();
  file->data_ = file->size_ > 0 ? file->owned_.data() : nullptr;
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(data_, size_);
}

}  // namespace sam2rt
