"""Entry point: reads sqlc's request on stdin, writes the response on stdout."""

import base64
import json
import sys

from ._emit import generate
from ._request import RequestError, parse


def main() -> int:
    """Answers one generate request; exits non-zero with a message on a bad one."""
    warnings: list[str] = []
    try:
        files = generate(parse(sys.stdin.buffer.read()), warnings)
    except RequestError as err:
        print(f"sqlc-gen-jobtable: {err}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"sqlc-gen-jobtable: warning: {warning}", file=sys.stderr)
    response = {
        "files": [
            {"name": name, "contents": base64.b64encode(text.encode()).decode()}
            for name, text in sorted(files.items())
        ]
    }
    sys.stdout.write(json.dumps(response))
    return 0


if __name__ == "__main__":
    sys.exit(main())
