"""Configuration precedence: defaults < TOML < CHUNKBRIDGE_* environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import AuthMode, ConfigError, load_config


def test_precedence_file_env_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(
        'idle-timeout = 50\nport = 7000\ndialect = "open-harness"\ntarget = 6\n'
        'cors_origins = ["https://file.example"]\n'
    )
    monkeypatch.setenv("CHUNKBRIDGE_PORT", "7100")
    monkeypatch.setenv("CHUNKBRIDGE_TARGET", "7")
    monkeypatch.setenv("CHUNKBRIDGE_CORS_ORIGINS", '["https://env.example"]')
    monkeypatch.setenv("CHUNKBRIDGE_MASK_ERRORS", "true")
    config = load_config(toml, target=5, host=None).config
    assert config.idle_timeout == 50 and config.dialect == "open-harness"  # file
    assert config.port == 7100 and config.cors_origins == ["https://env.example"]  # env > file
    assert config.mask_errors is True
    assert config.target == 5  # flag > env
    assert config.host == "127.0.0.1"  # None flags do not override


def test_bare_port_is_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "18713")
    assert load_config().config.port == 18713
    assert load_config(port=9).config.port == 9
    monkeypatch.setenv("CHUNKBRIDGE_PORT", "7")
    assert load_config().config.port == 7


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"upstream": "ws://x/no-placeholder"}, "{session_id}"),
        ({"auth": "jwt"}, "jwt_key"),
        ({"keepalive_interval": 200, "idle_timeout": 100}, "keepalive_interval"),
        ({"target": 8}, "target"),
        ({"port": "eighty"}, "port"),
    ],
)
def test_bad_configuration_is_reported_with_the_setting(flags: dict, message: str) -> None:
    with pytest.raises(ConfigError, match="invalid configuration") as info:
        load_config(**flags)
    assert message in str(info.value)


def test_jwt_key_file(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("secret")
    config = load_config(auth="jwt", jwt_key_file=str(key)).config
    assert config.auth is AuthMode.JWT and config.jwt_verification_key() == "secret"
