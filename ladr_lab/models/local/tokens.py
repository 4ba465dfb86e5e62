"""Watching the local model write: each token llama.cpp samples, written to the call's `TokenStream` as it comes
(models/stream.py), a cancel stopping the generation between two tokens, and the call's speeds from llama.cpp's own
counters.

Why a hook on `Llama.generate` and not `create_chat_completion(stream=True)`: the call stays exactly the unstreamed
one (same arguments, same code path in llama-cpp-python), so its answer, its `usage` and what it leaves in the prompt
cache are the same by construction, not by a second code path that must agree with the first; the streamed chunks
would also carry no token counts. `create_completion` draws its tokens from the instance's `generate`, so for the
duration of one call (under the runtime's lock) that instance attribute is a generator that passes every token on
unchanged and, on the side, decodes it for the stream (a UTF-8 character split over two tokens is held until it is
whole) and raises CallCancelled when the stream was cancelled. The stream's text is what the model wrote, end of
turn excluded; the answer the trace records is the call's own, as before.
"""
from __future__ import annotations

import codecs
import contextlib
from collections.abc import Iterator
from typing import Any

from ..stream import TokenStream

__all__ = ["speeds", "watching"]


@contextlib.contextmanager
def watching(llama: Any, stream: TokenStream | None) -> Iterator[None]:
    """While the block runs, the tokens `llama` generates are written to `stream` (nothing is hooked without one)."""
    if stream is None:
        yield
        return
    import llama_cpp

    real = llama.generate
    vocab = llama._model.vocab

    def generate(tokens: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        inner = real(tokens, *args, **kwargs)
        try:
            sent = None
            while True:
                try:
                    token = inner.send(sent)
                except StopIteration:
                    return
                stream.check()                   # cancelled: stop before this token is used
                if not llama_cpp.llama_vocab_is_eog(vocab, token):
                    stream.write(decoder.decode(llama.detokenize([token])))
                sent = yield token
        finally:
            inner.close()

    llama.generate = generate
    try:
        yield
    finally:
        del llama.generate          # the class's own method again


@contextlib.contextmanager
def speeds(llama: Any) -> Iterator[dict[str, float]]:
    """llama.cpp's counters around the block: yields a dict that holds, after it, `prompt_tps` (prompt tokens
    evaluated per second: a prompt read from the cache is not counted) and `gen_tps` (tokens generated per second),
    each only when llama.cpp measured it."""
    import llama_cpp

    out: dict[str, float] = {}
    ctx = llama._ctx.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    yield out
    data = llama_cpp.llama_perf_context(ctx)
    if data.n_p_eval > 0 and data.t_p_eval_ms > 0:
        out["prompt_tps"] = data.n_p_eval / (data.t_p_eval_ms / 1000.0)
    if data.n_eval > 0 and data.t_eval_ms > 0:
        out["gen_tps"] = data.n_eval / (data.t_eval_ms / 1000.0)
