"""The dashboard's guards: CSRF tokens, optional token or basic authentication, and headers.

CSRF is a signed double submit: a page sets a cookie holding a random nonce
and its HMAC under the app's secret, and embeds the same token in each form;
a POST passes only when the form's token equals the cookie's and the HMAC
holds, and, when the browser sends an Origin, that origin is the request's
own. The cookie is HttpOnly and SameSite=Strict, scoped to the mount path.
"""

import base64
import binascii
import hashlib
import hmac
import secrets
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

CSRF_COOKIE = "jobtable_csrf"
CSRF_FIELD = "csrf"
TOKEN_COOKIE = "jobtable_token"

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
"""Sent with every page: no inline script runs, even if some text escaped its escaping."""


def cookie_path(request: Request) -> str:
    """The path cookies are scoped to: the dashboard's mount path, or /."""
    root: str = request.scope.get("root_path", "")
    return root or "/"


class Csrf:
    """Makes and checks the dashboard's CSRF tokens under one secret."""

    def __init__(self, secret: str | bytes | None) -> None:
        if isinstance(secret, str):
            secret = secret.encode()
        if secret is not None and not isinstance(secret, bytes):
            raise TypeError(f"dashboard: secret is {type(secret).__name__}, want str or bytes")
        if secret is not None and len(secret) < 16:
            raise ValueError("dashboard: secret must be at least 16 bytes")
        self._key = secret if secret is not None else secrets.token_bytes(32)

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode(), hashlib.sha256).hexdigest()

    def valid(self, token: str | None) -> bool:
        """Whether token is one this secret signed."""
        if not token or token.count(".") != 1:
            return False
        nonce, mac = token.split(".")
        return hmac.compare_digest(mac, self._sign(nonce))

    def token_for(self, request: Request) -> tuple[str, bool]:
        """The request's token (the cookie's when valid), and whether it must be set anew."""
        current = request.cookies.get(CSRF_COOKIE)
        if current is not None and self.valid(current):
            return current, False
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}", True

    def set_cookie(self, request: Request, response: Response, token: str) -> None:
        """Sets token as the CSRF cookie on response."""
        response.set_cookie(
            CSRF_COOKIE,
            token,
            path=cookie_path(request),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    def refusal(self, request: Request, form: dict[str, str]) -> str | None:
        """Why the POST request with form fails the CSRF check, or None when it passes."""
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return "the request came from another origin"
        cookie = request.cookies.get(CSRF_COOKIE)
        sent = form.get(CSRF_FIELD)
        if not sent or not cookie:
            return "the CSRF token is missing: reload the page and try again"
        if not hmac.compare_digest(sent, cookie) or not self.valid(cookie):
            return "the CSRF token is wrong: reload the page and try again"
        return None


class Authenticate:
    """ASGI middleware: every HTTP request must carry the token or the basic credentials."""

    def __init__(
        self, app: ASGIApp, *, token: str | None, basic_auth: tuple[str, str] | None
    ) -> None:
        self.app = app
        self.token = token
        self.basic = None if basic_auth is None else ":".join(basic_auth)

    def _passes(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if self.token is not None:
            for offered in (
                value if scheme.lower() == "bearer" else None,
                request.cookies.get(TOKEN_COOKIE),
            ):
                if offered is not None and hmac.compare_digest(offered, self.token):
                    return True
        if self.basic is not None and scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return False
            return hmac.compare_digest(decoded.encode(), self.basic.encode())
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        offered = request.query_params.get("token")
        if (
            self.token is not None
            and offered is not None
            and hmac.compare_digest(offered, self.token)
        ):
            # The token leaves the URL (and the history) for an HttpOnly cookie.
            rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                TOKEN_COOKIE,
                self.token,
                path=cookie_path(request),
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            await response(scope, receive, send)
            return
        if self._passes(request):
            await self.app(scope, receive, send)
            return
        headers = {}
        if self.basic is not None:
            headers["www-authenticate"] = 'Basic realm="jobtable", charset="UTF-8"'
        refused = PlainTextResponse("authentication required\n", status_code=401, headers=headers)
        await refused(scope, receive, send)
