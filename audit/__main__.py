"""``python -m grokaudit``: the same command line as ``grokaudit``."""

from .cli import main

if __name__ == "__main__":
    main()
