"""The trainer's progress: :class:`grokaudit.progress.Progress` (one progress module)."""

from grokaudit.progress import Progress

__all__ = ["Progress"]
