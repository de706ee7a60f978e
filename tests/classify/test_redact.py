"""The one redaction pass: credentials, personal data and home paths never survive it."""

from __future__ import annotations

import string

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamfsm.classify._redact import MASK, redact_headers, redact_text, redact_url

# -- key formats ---------------------------------------------------------------------------------------------

KEYS = {
    "openai": "sk-abc123SECRETxyz",
    "openai_project": "sk-proj-Ab3_dE-f9GhIjKlMnOpQrStUvWxYz0123456789",
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AAAA",
    "google": "AIzaSyD-1234567890abcdefghijklmnopqrstu",
    "github_pat_classic": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "github_oauth": "gho_0123456789abcdefghijABCDEFGHIJ012345",
    "github_fine_grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "aws_session": "ASIAIOSFODNN7EXAMPLE",
    "slack_bot": "xoxb-1234567890-abcdefghijkl",
    "slack_user": "xoxp-1234567890-abcdefghijkl",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_key_formats_are_masked_in_prose(name: str) -> None:
    key = KEYS[name]
    out = redact_text(f"request failed with key {key} (retry later)")
    assert key not in out
    assert out == f"request failed with key {MASK} (retry later)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abcdefghijklmnop", f"Authorization: Bearer {MASK}"),
        ("auth header was bearer abcdefghijklmnop.", f"auth header was bearer {MASK}"),
        ('curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA=="', f'curl -H "Authorization: Basic {MASK}"'),
        ("sent Basic dXNlcjpwYXNzd29yZA== upstream", f"sent Basic {MASK} upstream"),
        ("https://x/v1?key=AIza-not-a-real-one&alt=sse", f"https://x/v1?key={MASK}&alt=sse"),
        ("api_key=hunter2 model=gpt", f"api_key={MASK} model=gpt"),
        ("X-Api-Key: hunter2", f"X-Api-Key: {MASK}"),
        ('{"api_key": "hunter two", "model": "gpt"}', f'{{"api_key": "{MASK}", "model": "gpt"}}'),
        ("{'password': 'it\\'s me', 'n': 1}", f"{{'password': '{MASK}', 'n': 1}}"),
        (
            '{"client_secret":"abc","access_token":"def"}',
            f'{{"client_secret":"{MASK}","access_token":"{MASK}"}}',
        ),
        ("refresh_token=r1&sig=s2&signature=s3", f"refresh_token={MASK}&sig={MASK}&signature={MASK}"),
        ("PASSWORD = letmein", f"PASSWORD = {MASK}"),
        ("session: 0xdeadbeef", f"session: {MASK}"),
        ("Cookie: a=1; b=2\nnext line", f"Cookie: {MASK}\nnext line"),
        ("set-cookie: sid=1; Path=/", f"set-cookie: {MASK}"),
        ("token: Bearer abcdefghijk", f"token: Bearer {MASK}"),
        ('secret: "unterminated value', f'secret: "{MASK}"'),
        ("mail alice.smith+llm@example.co.uk today", "mail [EMAIL] today"),
        ("clone https://bob:hunter2@github.com/o/r", f"clone https://{MASK}@github.com/o/r"),
        ("at /home/alice/proj/x.py line 3", "at ~/proj/x.py line 3"),
        ("at /Users/bob/proj/x.py", "at ~/proj/x.py"),
        ("at C:\\Users\\carol\\proj\\x.py", "at ~\\proj\\x.py"),
        ('"path": "/home/dave"', '"path": "~"'),
        ("file:///Users/erin/notes", "file://~/notes"),
    ],
)
def test_secret_shapes(text: str, expected: str) -> None:
    assert redact_text(text, limit=1000) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox; status=ok; model: gpt-4o, max_tokens=100, input_tokens: 5.",
        "basic configuration works, bearer of bad news",
        "see https://example.com/home/page and task-list-item",
        "sk-learn is a library",
        "",
    ],
)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact_text(text, limit=1000) == text


def test_truncation_happens_after_masking() -> None:
    key = KEYS["anthropic"]
    out = redact_text("x" * 30 + " " + key + " tail", limit=40)
    assert len(out) == 40
    assert out.endswith("…")
    assert out.startswith("x" * 30 + " [REDACT")
    assert redact_text("short", limit=40) == "short"
    assert redact_text("anything", limit=0) == ""


def test_redaction_is_idempotent() -> None:
    text = f"Bearer abcdefghijk key={KEYS['google']} a@b.io /home/x/y {KEYS['jwt']}"
    once = redact_text(text, limit=1000)
    assert redact_text(once, limit=1000) == once


def test_a_secret_cut_by_the_work_bound_is_never_half_kept() -> None:
    """Huge inputs are cut before scanning; masking then shortens the text, so what sat at the cut can move
    into the kept window. Wherever the cut falls, the secret there must not leak."""
    shrinkable = " ".join("sk-" + "a" * 200 for _ in range(20))  # each becomes a 10-character mask
    target = "sk-proj-" + "Q" * 60
    for offset in range(0, 4000, 11):
        text = shrinkable + " " + "w " * offset + target + " end"
        for limit in (200, 500):
            assert "QQQQ" not in redact_text(text, limit=limit)


def test_a_giant_token_is_bounded() -> None:
    out = redact_text("x" * 100_000)
    assert len(out) <= 200


# -- property: planted secrets never survive -----------------------------------------------------------------

_ALNUM = string.ascii_letters + string.digits


def _body(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size + 24)


# (full planted text, the part that must disappear)
_GLUED_SECRETS = st.one_of(
    st.tuples(_body(_ALNUM + "_-", 12), st.integers(0, 9)).map(lambda t: f"sk-{t[0]}{t[1]}"),
    st.tuples(_body(_ALNUM + "_-", 24), st.integers(0, 9)).map(lambda t: f"sk-proj-{t[1]}{t[0]}"),
    _body(_ALNUM + "_-", 24).map(lambda b: "sk-ant-api03-" + b),
    _body(_ALNUM + "_-", 35).map(lambda b: "AIza" + b),
    st.tuples(st.sampled_from("pousr"), _body(_ALNUM, 36)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    _body(_ALNUM + "_", 40).map(lambda b: "github_pat_" + b),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), _body(string.ascii_uppercase + string.digits, 16)).map(
        lambda t: t[0] + t[1][:16]
    ),
    st.tuples(st.sampled_from("bp"), _body(_ALNUM + "-", 20)).map(lambda t: f"xox{t[0]}-{t[1]}"),
    st.tuples(_body(_ALNUM + "_-", 10), _body(_ALNUM + "_-", 10), _body(_ALNUM + "_-", 20)).map(
        lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}"
    ),
)
_FILLER = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
    max_size=80,
)


@given(_FILLER, _GLUED_SECRETS, _FILLER)
def test_key_formats_never_survive_wherever_planted(before: str, secret: str, after: str) -> None:
    out = redact_text(before + secret + after, limit=10_000)
    assert secret not in out


_NAMES = st.sampled_from(
    [
        "key",
        "api_key",
        "apikey",
        "x-api-key",
        "token",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "password",
        "auth",
        "authorization",
        "signature",
        "sig",
        "session",
        "cookie",
        "OPENAI_API_KEY",
    ]
)
_VALUE = _body(_ALNUM, 14).map(lambda b: "V" + b)  # distinctive enough never to occur in filler by chance


@st.composite
def _bounded_secret(draw: st.DrawFn) -> tuple[str, str]:
    value = draw(_VALUE)
    shape = draw(st.sampled_from(["kv", "json", "header", "bearer", "basic", "email", "home", "url"]))
    name = draw(_NAMES)
    planted = {
        "kv": f"{name}={value}",
        "json": f'"{name}": "{value}"',
        "header": f"{name}: {value}",
        "bearer": f"Bearer {value}",
        "basic": f"Basic {value}==",
        "email": f"{value}@example.com",
        "home": draw(st.sampled_from([f"/home/{value}/x", f"/Users/{value}/x", f"C:\\Users\\{value}\\x"])),
        "url": f"https://user:{value}@host.example/p",
    }[shape]
    return planted, value


@given(_FILLER, _bounded_secret(), _FILLER)
def test_named_and_personal_secrets_never_survive_at_word_boundaries(
    before: str, planted: tuple[str, str], after: str
) -> None:
    text, value = planted
    out = redact_text(before + " " + text + "\n" + after, limit=10_000)
    assert value not in out


# -- URLs ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://user:pw@generativelanguage.googleapis.com:443/v1beta/models/gemini-2.0-flash"
            ":streamGenerateContent?key=AIzaSyD-1234567890abcdefghijklmnopqrstu&alt=sse#frag",
            "https://generativelanguage.googleapis.com:443/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        ),
        ("https://api.openai.com/v1/chat/completions", "https://api.openai.com/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/messages?beta=true", "http://127.0.0.1:8080/v1/messages"),
        ("https://proxy/AIzaSyD-1234567890abcdefghijklmnopqrstu/v1", f"https://proxy/{MASK}/v1"),
        ("https://proxy/keys/sk-abc123SECRETxyz/chat", f"https://proxy/keys/{MASK}/chat"),
        (
            "https://h/v1/responses/resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
            f"https://h/v1/responses/{MASK}",
        ),
        ("https://h/a;jsessionid=ABC123/b", f"https://h/a;jsessionid={MASK}/b"),
        ("/v1/chat/completions?api-version=2024-06-01", "/v1/chat/completions"),
        ("user:pass@host/p", f"{MASK}@host/p"),
        ("https://u:p@ss@host.example/x", "https://host.example/x"),
        ("https://host.example#only-fragment", "https://host.example"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


_URL_WORD = st.text(alphabet=string.ascii_lowercase + string.digits + "-._~", min_size=1, max_size=12)


@given(
    scheme=st.sampled_from(["http", "https", "wss"]),
    user=_body(_ALNUM, 10).map(lambda b: "U" + b),
    password=_body(_ALNUM + "-._~%", 10).map(lambda b: "P" + b),
    host=st.from_regex(r"[a-z][a-z0-9\-]{0,10}(\.[a-z]{2,6}){1,2}", fullmatch=True),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    segments=st.lists(_URL_WORD, max_size=5),
    query=st.dictionaries(_URL_WORD, _body(_ALNUM, 10).map(lambda b: "Q" + b), max_size=4),
    fragment=st.one_of(st.none(), _body(_ALNUM, 10).map(lambda b: "F" + b)),
)
def test_redact_url_keeps_only_scheme_host_port_and_path(
    scheme: str,
    user: str,
    password: str,
    host: str,
    port: int | None,
    segments: list[str],
    query: dict[str, str],
    fragment: str | None,
) -> None:
    origin = f"{scheme}://{host}" + (f":{port}" if port is not None else "")
    path = "".join("/" + s for s in segments)
    url = f"{scheme}://{user}:{password}@{origin.split('://', 1)[1]}{path}"
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    if fragment is not None:
        url += "#" + fragment
    out = redact_url(url)
    assert out == origin + path
    assert user not in out
    assert password not in out
    assert all(v not in out for v in query.values())


@given(st.text(max_size=200))
def test_redact_url_never_keeps_a_query_or_fragment(url: str) -> None:
    out = redact_url(url)
    assert "?" not in out
    assert "#" not in out


# -- headers -------------------------------------------------------------------------------------------------


def test_redact_headers_keeps_the_allow_list_only() -> None:
    headers = {
        "Authorization": "Bearer sk-abc123SECRETxyz",
        "x-api-key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz",
        "Cookie": "session=abc",
        "OpenAI-Organization": "org-secret",
        "Content-Type": "text/event-stream; charset=utf-8",
        "x-request-id": "req_123",
        "request-id": "req_456",
        "openai-processing-ms": "321",
        "retry-after": "7",
        "retry-after-ms": "7000",
        "x-should-retry": "false",
        "x-ratelimit-remaining-tokens": "1234",
        "x-ratelimit-reset-requests": "6m0s",
        "anthropic-ratelimit-requests-reset": "2024-01-01T00:00:00Z",
        "x-ratelimit-free-text": "call alice@example.com",
        "server": "nginx sk-abc123SECRETxyz",
        "cf-ray": "8a1b2c3d4e5f-SJC",
    }
    out = redact_headers(headers)
    assert out == {
        "content-type": "text/event-stream; charset=utf-8",
        "x-request-id": "req_123",
        "request-id": "req_456",
        "openai-processing-ms": "321",
        "retry-after": "7",
        "retry-after-ms": "7000",
        "x-should-retry": "false",
        "x-ratelimit-remaining-tokens": "1234",
        "x-ratelimit-reset-requests": "6m0s",
        "anthropic-ratelimit-requests-reset": "2024-01-01T00:00:00Z",
        "server": f"nginx {MASK}",
        "cf-ray": "8a1b2c3d4e5f-SJC",
    }


def test_redact_headers_accepts_httpx_headers_pairs_and_bytes() -> None:
    headers = httpx.Headers([("Via", "1.1 a"), ("via", "1.1 b"), ("Authorization", "Bearer abcdefghijk")])
    assert redact_headers(headers) == {"via": "1.1 a, 1.1 b"}
    pairs: list[tuple[str, str]] = [("Date", "Mon, 01 Jan 2024 00:00:00 GMT"), ("X-Api-Key", "k")]
    assert redact_headers(pairs) == {"date": "Mon, 01 Jan 2024 00:00:00 GMT"}
    raw = httpx.Headers({b"server": b"uvicorn", b"set-cookie": b"a=b"})
    assert redact_headers(raw) == {"server": "uvicorn"}
