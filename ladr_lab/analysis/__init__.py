"""Questions answered about recorded runs without calling the model again: re-judging against an edited
ladder, diffs of two runs and of two rounds' prompts, lint of the pitfalls of seed 001, and evaluation
over many inputs."""
from .rejudge import rejudge, rejudge_rows

__all__ = ["rejudge", "rejudge_rows"]
