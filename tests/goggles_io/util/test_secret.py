"""Secrets in handler specs never show themselves, yet travel and compare."""

from __future__ import annotations

import json
import logging

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from goggles_io._util.secret import REDACTED, Secret, fingerprint, wrap_secrets

_values = st.text(min_size=1).filter(lambda t: t not in REDACTED and "redacted" not in t)


class TestSecret:
    @given(st.text(min_size=1))
    def test_text_forms_are_redacted(self, value: str) -> None:
        """repr, str, f-strings, %-formatting and containers show exactly what <redacted> would."""

        def shown(x: str) -> str:
            percent = "%s" % (x,)  # noqa: UP031 (the %-operator is what we test)
            return f"{x} {x!r} {x:>20} {percent} {[x]} { ({'k': x})!s}"

        assert shown(REDACTED) == shown(Secret(value))

    @given(_values)
    def test_reveal_and_wire_keep_the_value(self, value: str) -> None:
        """reveal(), msgpack and json carry the real characters."""
        secret = Secret(Secret(value))

        assert value == secret.reveal() == msgpack.unpackb(msgpack.packb(secret))
        assert value == json.loads(json.dumps(secret))

    def test_log_record_is_redacted(self, caplog: pytest.LogCaptureFixture) -> None:
        """A secret passed to a log call prints redacted."""
        logging.getLogger("t").warning("key is %s", Secret("hunter2"))

        assert "hunter2" not in caplog.text

    def test_fingerprint_compares_values(self) -> None:
        """Equal secrets have equal fingerprints; different ones differ; neither shows the value."""
        a, b = wrap_secrets({"api_key": "one"}), wrap_secrets({"api_key": "two"})

        assert fingerprint(a) == fingerprint({"api_key": "one"})
        assert fingerprint(a) != fingerprint(b)
        assert "one" not in fingerprint(a)
