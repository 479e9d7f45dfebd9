#pragma once

namespace sam2rt {

// Keeps memory the engine frees inside the process (glibc's malloc), for
// processes that run the engine again and again: a batch of prompts, a corpus
// of images. By default glibc returns large freed blocks to the kernel, and
// touching them again costs a page fault per 4 KiB (~11 us on these machines);
// Dask's workers even start with MALLOC_TRIM_THRESHOLD_=65536. Changes the whole
// process's allocator, so only programs that own their process call it (the CLI,
// a batch worker), never the library on its own. No effect without glibc.
void keep_freed_memory_in_process();

}  // namespace sam2rt
