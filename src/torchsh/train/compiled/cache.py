"""Where `--compile`'s work is kept, and whether this machine can compile at all.

torch.compile on CPU (inductor) writes C++ and builds it with the machine's C++ compiler: without one it
fails deep inside the first step, so `require_compiler` asks inductor's own search (torch._inductor.
cpp_builder.get_cpp_compiler: config.cpp.cxx, from $CXX or g++ on PATH) first and refuses with the fix.

Inductor keeps its generated code, built libraries and its FX-graph and AOTAutograd caches in
TORCHINDUCTOR_CACHE_DIR, /tmp/torchinductor_USER by default: a predictable shared path whose .so files the
daemon would load and whose cache entries PyTorch unpickles, so another user could plant them. `prepare`
points it (and Triton's) at a private folder beside the daemon's socket (torchd.compile/, owner and mode
checked as the socket's folder is), so compiled code outlives a restart there: a restarted daemon's compile
of a model it compiled before hits those caches (no C++ build, no inductor codegen). That unpickling is safe
only because the folder is proven ours; PyTorch's portable "mega cache" (save_cache_artifacts) is not kept:
it holds the same entries as those caches, and loading it cost a restart ~0.15 s and one more pickle.

Not used, measured on PyTorch 2.13: its AOT precompile (torch.compile(f, fullgraph=True).aot_compile,
torch.compiler.load_compiled_function), which saves dynamo's trace and guards so a restart need not trace.
For the forward+loss it loads in ~0.2 s against ~0.36 s for a trace and cache hit, and its guards refuse a
changed width, activation, bias, dtype or batch; but optimizer.step() does not capture as one graph (it
graph-breaks on purpose around its no_grad), and Adam's unwrapped step, captured, fails to load
(Adam.__setstate__ on the pickled guard state). ~0.15 s of a ~4 s restart did not pay for a third pickle.
"""
import os
import threading
import warnings

from torchsh import paths, trust
from torchsh.errors import TorchshError

WARM_WAIT_S = 120  # the first compile waits this long at most for the start's warm-up to finish
_prepared = set()  # the folders this daemon has set up
_warming = []      # the warm-up threads started (one per daemon): the first compile waits for them


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
    """At a daemon's start, when an earlier daemon compiled (its folder is there): do on threads of their
    own what every daemon's first compile pays once even with all code cached (~2.8 s on 2 cores): import
    dynamo and inductor (~1.6 s of CPU; a daemon's first optimizer imports dynamo anyway), probe the CPU's
    vector instruction sets (~1.1 s, mostly waiting: inductor builds and loads a test library per ISA in a
    child process, so it runs beside the imports) and hash PyTorch's sources (its cache keys). So a
    restarted daemon's first compiled step pays only for its trace and loading its cached code."""
    if os.path.isdir(folder):
        thread = threading.Thread(target=_warm, args=(folder,), name="compile-warm", daemon=True)
        _warming.append(thread)
        thread.start()


def _warm(folder):
    def work():
        _use_folder(folder)
        from torch._inductor import codecache, cpu_vec_isa
        probe = threading.Thread(target=_quietly, args=(cpu_vec_isa.pick_vec_isa,), name="compile-isa", daemon=True)
        probe.start()  # cached for the process; children do its work, so the imports go on meanwhile
        import torch._dynamo  # noqa: F401
        from torch._inductor import compile_fx  # noqa: F401
        require_compiler()
        codecache.torch_key()  # cached for the process
        probe.join()
    _quietly(work)


def _quietly(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception:  # the first --compile finds out again, and says why
        pass


def prepare(folder):
    """Once per daemon: the start's warm-up waited for (its probes are cached but not locked: a compile
    beside them would run them again), the private cache folder made and checked, inductor pointed at it."""
    for thread in _warming:
        thread.join(WARM_WAIT_S)
    if folder in _prepared:
        return
    require_compiler()
    _use_folder(folder)
    _prepared.add(folder)


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
