"""Sending a workload's requests to a stack: routes applied, no compression asked, the answer's coding judged."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping

import httpx

from pgarena.contract.workloads import Request, routed


def send(client: httpx.Client, request: Request) -> httpx.Response:
    """Send one request (with its content type, if any) through a stack's client."""
    headers = {"content-type": request.content_type} if request.content_type else {}
    return client.request(request.method, request.path, content=request.body, headers=headers)


def http_client(base_url: str, timeout_s: float, routes: Mapping[str, str]) -> httpx.Client:
    """An httpx client for one stack whose requests follow the stack's routes.

    NOTE: it sends no Accept-Encoding, like the load generators (k6 sends none; oha runs with
    --disable-compression): an answer with a Content-Encoding is one the request did not ask for.
    """

    def reroute(request: httpx.Request) -> None:
        target = routed(request.url.raw_path.decode(), routes)
        if target != request.url.raw_path.decode():
            request.url = request.url.copy_with(raw_path=target.encode())

    client = httpx.Client(base_url=base_url, timeout=timeout_s, verify=_tls_context(),
                          event_hooks={"request": [reroute]} if routes else {})
    del client.headers["accept-encoding"]  # httpx's default asks for gzip, deflate (and br, zstd if installed)
    return client


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS settings, made once: each client would otherwise load the CA bundle again (about 40 ms,
    on the critical path of every window, whose answer sampler is a new client)."""
    return httpx.create_ssl_context()


def unrequested_encoding(response: httpx.Response) -> str | None:
    """The answer's Content-Encoding if its request did not accept it (None: none, identity, or accepted).

    A request without Accept-Encoding accepts no coding here: RFC 9110 would allow any, but the load
    generators send none and count the bytes as they come, so a compressed answer is not the work measured.
    """
    encoding = (response.headers.get("content-encoding") or "").strip().lower()
    codings = [c.strip() for c in encoding.split(",") if c.strip() and c.strip() != "identity"]
    if not codings:
        return None
    accepted = set()
    for item in (response.request.headers.get("accept-encoding") or "").lower().split(","):
        name, _, params = item.partition(";")
        if name.strip() and params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000"):
            accepted.add(name.strip())
    return None if "*" in accepted or all(c in accepted for c in codings) else encoding
