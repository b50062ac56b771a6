"""The version of grokaudit: a leaf module, imported by every module that writes it into an
output (the JSON result, the trail, a log's provenance) without importing the package's
``__init__``."""

__version__ = "0.1.0"
