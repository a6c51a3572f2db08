"""What the ``envre`` command needs to know about an error, held by types: :class:`Failure` (a run that cannot go
on for a reason outside the code: exit 2, one line) and :class:`Remedy` (the keyword argument that lifts a refusal,
which the command names as its flag). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass


class Failure(RuntimeError):
    """A run that cannot go on for a reason outside envre-hf's code (a server, a knowledge base, a folder's state,
    an option that does not fit the folder): the command says it in one line, exit status 2."""


@dataclass(frozen=True)
class Remedy:
    """An error message ``before`` + the option that lifts it + ``after``, given as the error's one argument:
    ``str(err)`` names the library's keyword (``pass overwrite=True``), the command its own flag (``--overwrite``)."""

    before: str
    keyword: str
    value: str = "True"
    after: str = ""

    def __str__(self) -> str:
        return self.said(f"{self.keyword}={self.value}")

    def said(self, option: str) -> str:
        """The message with the option spelt ``option``."""
        return f"{self.before}{option}{self.after}"


def remedy_of(err: BaseException) -> Remedy | None:
    """The :class:`Remedy` an error was raised with, if any."""
    return err.args[0] if len(err.args) == 1 and isinstance(err.args[0], Remedy) else None
