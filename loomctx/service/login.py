"""Signing in a browser, so the report pages open on a service with keys.

A browser cannot send ``Authorization`` when it follows a link, so the pages also accept a
cookie. ``GET /login`` is a form; posting a tenant key to it sets ``loomctx_page``: an HttpOnly,
``SameSite=Strict`` cookie (``Secure`` over https) that holds no key, only the tenant, an expiry,
a random sign-in id and an HMAC of the three under the tenant's key. Any process with the same
key file accepts it; removing the key from the file ends it (the file is read again on change,
:class:`~loomctx.service.tenants.KeyFile`), and ``POST /logout`` ends it for good: its sign-in
id is recorded as ended (:mod:`.signouts`, shared by the processes of a PostgreSQL store), so a
copy of the cookie no longer opens a page. The key travels once, in a POST body, so it never
appears in a URL, a server log or the browser's history.

The cookie opens the HTML pages only (``GET /builds/{id}``, ``GET /sessions/{id}``); the API and
the proxy still need the key in a header, so a page a tenant opens cannot be made to spend or
change anything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import secrets
import time
from collections.abc import Mapping
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from loomctx.service.core import Service
from loomctx.service.signouts import SignOuts
from loomctx.service.tenants import Unauthorized
from loomctx.service.throttle import Throttled, checked_tenant

COOKIE = "loomctx_page"
LIFETIME = 12 * 3600
"""Seconds a sign-in lasts."""
_CSP = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
_MAX_FORM = 8192


class LoginRequired(Unauthorized):
    """A browser asked for a page without a key or a valid cookie: send it to ``/login``."""

    def __init__(self, path: str) -> None:
        super().__init__("no API key: sign in at /login, or send 'Authorization: Bearer KEY'")
        self.path = path


def _sign(key: str, tenant: str, expires: int, signin: str) -> str:
    mac = hmac.new(key.encode(), f"loomctx-page|{tenant}|{expires}|{signin}".encode(),
                   hashlib.sha256)
    return mac.hexdigest()


def cookie_value(key: str, tenant: str, now: float | None = None) -> str:
    """The cookie that signs ``tenant`` in with ``key`` for :data:`LIFETIME` seconds, under a
    new random sign-in id."""
    expires = int(now if now is not None else time.time()) + LIFETIME
    name = base64.urlsafe_b64encode(tenant.encode()).decode().rstrip("=")
    signin = secrets.token_hex(16)
    return f"{name}.{expires}.{signin}.{_sign(key, tenant, expires, signin)}"


def _signed(keys: Mapping[str, str], value: str,
            now: float | None = None) -> tuple[str, str, int] | None:
    """(tenant, sign-in id, expiry) of a valid cookie; None if forged, expired, or its key
    was removed."""
    try:
        name, expires_text, signin, mac = value.split(".")
        tenant = base64.urlsafe_b64decode(name + "=" * (-len(name) % 4)).decode()
        expires = int(expires_text)
    except ValueError:
        return None
    if expires < (now if now is not None else time.time()):
        return None
    ok = False
    for key, owner in keys.items():  # every key, so the time does not tell which matched
        ok |= owner == tenant and hmac.compare_digest(_sign(key, tenant, expires, signin), mac)
    return (tenant, signin, expires) if ok else None


def cookie_tenant(keys: Mapping[str, str], value: str, now: float | None = None) -> str | None:
    """The tenant a cookie signs in, or None (forged, expired, or its key was removed; a
    cookie ended by ``POST /logout`` is refused by :func:`page_tenant`, which asks the record
    of ended sign-ins)."""
    signed = _signed(keys, value, now)
    return None if signed is None else signed[0]


async def page_tenant(request: Request) -> str:
    """The tenant of a page request: its key header, else its sign-in cookie (unless logged
    out). A browser without either is sent to the sign-in form (:class:`LoginRequired`)."""
    service: Service = request.app.state.service
    keys = service.options.keys
    try:
        return checked_tenant(request, keys)
    except Unauthorized:
        if "authorization" in request.headers or "x-api-key" in request.headers:
            raise
        value = request.cookies.get(COOKIE)
        signed = _signed(keys, value) if value else None
        if signed is not None and not await _signouts(request).ended(signed[1]):
            return signed[0]
        if "text/html" in request.headers.get("accept", ""):
            raise LoginRequired(request.url.path) from None
        raise


def _signouts(request: Request) -> SignOuts:
    """The app's record of ended sign-ins (made on first use, over the service's shared
    store when it has one)."""
    state = request.app.state
    if getattr(state, "signouts", None) is None:
        state.signouts = SignOuts(state.service.shared)
    signouts: SignOuts = state.signouts
    return signouts


def _next(raw: str | None) -> str:
    """A local path to return to after signing in (anything else: the service's root)."""
    if raw and raw.startswith("/") and not raw.startswith(("//", "/\\")) and raw.isprintable():
        return raw
    return "/docs"


def _form(next_path: str, problem: str = "", status: int = 200) -> HTMLResponse:
    note = f"<p role='alert'>{html.escape(problem)}</p>" if problem else ""
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>loomctx: sign in</title>"
            "</head><body><h1>Sign in to the loomctx pages</h1>"
            f"{note}<form method='post' action='/login'>"
            f"<input type='hidden' name='next' value='{html.escape(next_path, quote=True)}'>"
            "<label>API key <input type='password' name='key' autocomplete='current-password' "
            "required autofocus></label> <button type='submit'>Sign in</button></form>"
            "<p>The key is sent once; the browser keeps a signed cookie, not the key.</p>"
            "</body></html>")
    return HTMLResponse(page, status_code=status, headers=_headers())


def _headers() -> dict[str, str]:
    return {"content-security-policy": _CSP, "cache-control": "no-store",
            "referrer-policy": "no-referrer"}


def login_redirect(exc: LoginRequired) -> Response:
    return RedirectResponse(f"/login?next={quote(exc.path, safe='/')}", status_code=303,
                            headers=_headers())


def router() -> APIRouter:
    r = APIRouter(tags=["pages"])

    @r.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request) -> HTMLResponse:
        """The sign-in form of the HTML pages."""
        return _form(_next(request.query_params.get("next")))

    @r.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        """Sign a browser in with a tenant key (form field ``key``): sets the page cookie."""
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > _MAX_FORM:
                return _form("/docs", "the form is too large", 413)
        form = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=4)
        key = (form.get("key") or [""])[0].strip()
        target = _next((form.get("next") or [""])[0])
        service: Service = request.app.state.service
        keys = service.options.keys
        if not keys:
            return RedirectResponse(target, status_code=303, headers=_headers())
        try:
            tenant = checked_tenant(request, keys, {"authorization": f"Bearer {key}"})
        except Unauthorized:
            return _form(target, "unknown API key", 401)
        except Throttled as exc:
            page = _form(target, str(exc), 429)
            page.headers["retry-after"] = str(exc.retry_after)
            return page
        response = RedirectResponse(target, status_code=303, headers=_headers())
        response.set_cookie(COOKIE, cookie_value(key, tenant), max_age=LIFETIME, path="/",
                            httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        return response

    @r.post("/logout")
    async def logout(request: Request) -> Response:
        """End the browser's sign-in: its cookie is dropped and refused from now on, by
        every process of the service."""
        value = request.cookies.get(COOKIE)
        service: Service = request.app.state.service
        signed = _signed(service.options.keys, value) if value else None
        if signed is not None:
            await _signouts(request).end(signed[1], signed[2])
        response = RedirectResponse("/login", status_code=303, headers=_headers())
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    return r


__all__ = ["COOKIE", "LIFETIME", "LoginRequired", "cookie_tenant", "cookie_value",
           "login_redirect", "page_tenant", "router"]
