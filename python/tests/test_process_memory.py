"""keep_freed_memory_in_process: a batch worker stops giving freed memory back to the kernel."""

import os
import subprocess
import sys

# Allocates, touches and frees 16 MB twenty times; prints the page faults it took.
ALLOCATE_AND_FREE = """
import resource, sys
from sam2rt import _sam2rt
if sys.argv[1] == "keep":
    _sam2rt.keep_freed_memory_in_process()
block = b"x" * (16 << 20)  # malloc, then every page written (numpy would ask for huge pages)
del block  # the first one faults in any case
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    block = b"x" * (16 << 20)
    del block
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def page_faults(mode):
    # As Dask's nanny starts a worker (distributed.nanny.pre-spawn-environ).
    environment = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    result = subprocess.run([sys.executable, "-c", ALLOCATE_AND_FREE, mode], env=environment, check=True,
                            capture_output=True, text=True)
    return int(result.stdout)


def test_freed_memory_is_reused_instead_of_faulted_in_again():
    pages_per_array = (16 << 20) // 4096
    assert page_faults("default") >= 10 * pages_per_array  # glibc returns each array to the kernel
    assert page_faults("keep") < pages_per_array  # all twenty reuse the first one's memory
