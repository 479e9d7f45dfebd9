"""The inputs of a batch job and their outputs, named exactly as the CLI's batch mode names them.

`sam2rt encode|everything --input-dir DIR | --input-list FILE --out-dir OUT` (tools/batch_job.cpp):
every .png/.jpg/.jpeg under DIR (recursively) goes to OUT/<path relative to DIR with the
output's extension>; a list's paths go to OUT/<file name with the output's extension>.
Sorted by (input, relative output), as the CLI sorts them.
"""

import os
from typing import NamedTuple

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")


class BatchItem(NamedTuple):
    input: str
    output: str


def _with_extension(path, extension):
    return os.path.splitext(path)[0] + extension


def _walk_error(error):
    raise ValueError(f"--input-dir: {error}")


def _from_folder(input_dir, extension):
    pairs = []
    for folder, subfolders, files in os.walk(input_dir, onerror=_walk_error):
        subfolders.sort()
        for name in files:
            path = os.path.join(folder, name)
            if os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS and os.path.isfile(path):
                pairs.append((path, _with_extension(os.path.relpath(path, input_dir), extension)))
    if not pairs:
        raise ValueError(f"no images to process: no .png/.jpg/.jpeg files under --input-dir '{input_dir}'")
    return pairs


def _from_list(input_list, extension):
    try:
        with open(input_list, encoding="utf-8", errors="surrogateescape", newline="\n") as lines:
            names = [line.rstrip("\n").rstrip("\r ") for line in lines]
    except OSError as error:
        raise ValueError(f"--input-list '{input_list}': cannot open the file ({error.strerror})") from None
    pairs = [(name, _with_extension(os.path.basename(name), extension)) for name in names
             if name and not name.startswith("#")]
    if not pairs:
        raise ValueError(f"no images to process: --input-list '{input_list}' names none")
    return pairs


def batch_items(out_dir, extension, input_dir=None, input_list=None):
    """The inputs in a stable order with their outputs under out_dir; ValueError for no inputs,
    both or neither of input_dir and input_list, or two inputs that would share an output."""
    if (input_dir is None) == (input_list is None):
        raise ValueError("give exactly one of --input-dir and --input-list")
    if not out_dir:
        raise ValueError("batch mode needs --out-dir for its outputs")
    if input_dir is not None:
        if not os.path.isdir(input_dir):
            raise ValueError(f"--input-dir '{input_dir}' is not a folder")
        pairs = _from_folder(input_dir, extension)
    else:
        pairs = _from_list(input_list, extension)
    pairs.sort()
    owners = {}
    items = []
    for source, relative in pairs:
        if relative in owners:
            raise ValueError(f"inputs '{owners[relative]}' and '{source}' would both write '{relative}'; "
                             "rename one or use --input-dir")
        owners[relative] = source
        items.append(BatchItem(source, os.path.join(out_dir, relative)))
    return items
