"""``python -m contextos.api.write_openapi [path]``: write the API's OpenAPI document (``make openapi``)."""

from __future__ import annotations

import sys
from pathlib import Path

from contextos.api.app import app
from contextos.api.openapi import openapi_json


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    text = openapi_json(app)
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
