"""torch_threads.py: the thread count of PyTorch and of the OpenBLAS it loaded,
for bench/torch_bench.py and bench/torch_text.py (both set it the same way).

torch.set_num_threads does not reach Debian's OpenBLAS, which keeps its own
pool: openblas_set_num_threads is found in the library torch loaded
(/proc/self/maps) and called too."""

import torch


def find_openblas():
    """The OpenBLAS torch loaded (a ctypes library with openblas_set_num_threads)
    and its path, or (None, None)."""
    import ctypes
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libopenblas" in line}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_set_num_threads  # raises AttributeError if absent
            return lib, path
        except (OSError, AttributeError):
            continue
    return None, None


OPENBLAS, OPENBLAS_PATH = find_openblas()
OPENBLAS_SET_THREADS = OPENBLAS.openblas_set_num_threads if OPENBLAS is not None else None


def openblas_core():
    """One line: the OpenBLAS core torch's matmul uses, or what torch's BLAS is."""
    import ctypes
    if OPENBLAS is None:
        import re
        blas = re.search(r"\bBLAS_INFO=[^,\s]*", torch.__config__.show())
        return "torch's BLAS is not OpenBLAS (%s)" % (blas.group(0) if blas else "no BLAS_INFO")
    try:
        corename = OPENBLAS.openblas_get_corename
    except AttributeError:
        return "torch uses OpenBLAS %s, which has no openblas_get_corename" % OPENBLAS_PATH
    corename.restype = ctypes.c_char_p
    line = "torch's openblas core: %s" % corename().decode()
    try:
        config = OPENBLAS.openblas_get_config
        config.restype = ctypes.c_char_p
        line += " (%s)" % config().decode().strip()
    except AttributeError:
        pass
    return line + ", " + OPENBLAS_PATH


def set_threads(threads):
    torch.set_num_threads(threads)
    if OPENBLAS_SET_THREADS is not None:
        OPENBLAS_SET_THREADS(threads)
