#include "api/process_memory.h"

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sam2rt {

void keep_freed_memory_in_process() {
#if defined(__GLIBC__)
  // Blocks under 32 MiB come from the heap (reused when freed), not from their
  // own mappings; the heap's top is trimmed only past 1 GiB of free space.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace sam2rt
