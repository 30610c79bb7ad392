"""Where `--compile`'s work is kept, and whether this machine can compile at all.

torch.compile on CPU (inductor) writes C++ and builds it with the machine's C++ compiler: without one it
fails deep inside the first step, so `require_compiler` asks inductor's own search (torch._inductor.
cpp_builder.get_cpp_compiler: config.cpp.cxx, from $CXX or g++ on PATH) first and refuses with the fix.

Inductor keeps its generated code and built libraries in TORCHINDUCTOR_CACHE_DIR, /tmp/torchinductor_USER by
default: a predictable shared path whose .so files the daemon would load, so another user could plant them.
`prepare` points it (and Triton's) at a private folder beside the daemon's socket (torchd.compile/, owner
and mode checked as the socket's folder is), so compiled code outlives a restart there. PyTorch's portable
"mega cache" (torch.compiler.save_cache_artifacts) is kept there too, saved atomically after each compile
and loaded at the first compile of a daemon's life: it is unpickled, which is safe only because the folder
and the file are proven ours (the same trust the built libraries already need).
"""
import os
import threading
import warnings

from torchsh import paths, trust
from torchsh.errors import TorchshError
from torchsh.fileio import atomic_write

ARTIFACTS = "artifacts.bin"
_prepared = set()  # the folders this daemon has set up (and loaded artifacts from)
_save_lock = threading.Lock()


def folder_for(socket_path):
    """The private folder beside the socket: torchd.sock -> torchd.compile/."""
    return paths.sibling(socket_path, ".compile")


def require_compiler():
    """Refuse (not_supported) before anything compiles when inductor finds no C++ compiler."""
    with warnings.catch_warnings():  # importing inductor warns of PyTorch's own deprecations
        warnings.simplefilter("ignore")
        from torch._inductor import cpp_builder, exc
    try:
        cpp_builder.get_cpp_compiler()
    except (exc.InvalidCxxCompiler, OSError) as e:
        raise TorchshError("not_supported", "--compile needs a C++ compiler and this daemon finds none (%s)"
                           % (str(e).splitlines() or ["g++ not found"])[0],
                           "install one (apt install g++, or your system's build tools) or set CXX to its "
                           "path, then `torch daemon restart`; or run without --compile") from None


def warm_in_background(folder):
    """At a daemon's start, when an earlier daemon compiled (its folder is there): do on a thread of its
    own what every daemon's first compile pays once even with all code cached (~5 s on 2 cores): import
    dynamo and inductor, find the compiler, probe the CPU's vector instruction sets (inductor builds and
    runs a test program per ISA) and hash PyTorch's sources (its cache keys). So a restarted daemon's
    first compiled step pays only for its trace and loading its cached code (issue 27: < 3 s)."""
    if os.path.isdir(folder):
        threading.Thread(target=_warm, args=(folder,), name="compile-warm", daemon=True).start()


def _warm(folder):
    try:
        _use_folder(folder)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch._inductor import codecache, compile_fx, cpu_vec_isa  # noqa: F401
            require_compiler()
            cpu_vec_isa.pick_vec_isa()  # cached for the process
            codecache.torch_key()       # cached for the process
    except Exception:  # the first --compile finds out again, and says why
        pass


def prepare(folder):
    """Once per daemon: the private cache folder made and checked, inductor pointed at it, the portable
    artifacts of earlier daemons loaded."""
    if folder in _prepared:
        return
    require_compiler()
    _use_folder(folder)
    _load_artifacts(os.path.join(folder, ARTIFACTS))
    _prepared.add(folder)


def save_artifacts(folder):
    """After a compile: everything compiled so far, as PyTorch's portable artifacts, written atomically."""
    import torch
    with _save_lock:
        saved = torch.compiler.save_cache_artifacts()
        if saved is not None and saved[0]:
            atomic_write(os.path.join(folder, ARTIFACTS), lambda tmp: _write_bytes(tmp, saved[0]))


def _write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def _use_folder(folder):
    """Inductor's and Triton's caches in FOLDER, once it is proven ours and private."""
    _private_folder(folder)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "triton")


def _private_folder(folder):
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    why = trust.untrusted(folder, trust.S_IFDIR)
    if why:
        raise TorchshError("untrusted", "the compile cache: " + why, trust.UNTRUSTED_HINT)


def _load_artifacts(path):
    import torch
    try:
        why = trust.untrusted(path, trust.S_IFREG)
    except FileNotFoundError:
        return
    if why:
        raise TorchshError("untrusted", "the compile cache: " + why, trust.UNTRUSTED_HINT)
    with open(path, "rb") as f:
        torch.compiler.load_cache_artifacts(f.read())
