"""Errors raised while converting a function's source: unsupported syntax, missing source."""
import linecache


class ConversionError(SyntaxError):
    """A construct d2s cannot convert, reported at the user's original file and line.

    Being a SyntaxError, Python's traceback shows ``File "...", line N`` with the line and a
    caret under it, as it does for a real syntax error.
    """

    def __init__(self, message, filename=None, lineno=None, col_offset=0):
        text = linecache.getline(filename, lineno).rstrip("\n") if filename and lineno else None
        offset = (col_offset or 0) + 1
        if text:
            offset = len(text) - len(text.lstrip()) + 1
        super().__init__(message, (filename, lineno, offset, text))

    def __str__(self):
        where = f'\n  File "{self.filename}", line {self.lineno}' if self.filename else ""
        shown = ""
        if self.text:
            line = self.text.strip()
            shown = f"\n    {line}\n    {'^' * max(1, len(line))}"
        return f"{self.msg}{where}{shown}"


class SourceUnavailable(Exception):
    """``inspect.getsource`` cannot find the function's source (defined in a REPL or by
    ``exec``); the caller should fall back to running the function eagerly."""
