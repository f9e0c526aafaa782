"""A benchmark's options on the command line (``python -m evaluator score``): ``Options``."""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from typing import Self


class Options(ABC):
    """The options ``python -m evaluator`` offers for one benchmark."""

    @classmethod
    @abstractmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """The benchmark's options on ``python -m evaluator score``."""

    @classmethod
    @abstractmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        """The benchmark built from the options ``add_arguments`` declared."""
