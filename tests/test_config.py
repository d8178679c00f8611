"""Configuration precedence: defaults < TOML < CHUNKBRIDGE_* environment < flags."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from chunkbridge.gateway.config import AuthMode, ConfigError, GatewayConfig
from chunkbridge.gateway.config_sources import load_config
from tests.helpers import run_cli


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


def test_the_target_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKBRIDGE_TARGET", "7")
    assert load_config().config.target == 7
    monkeypatch.setenv("CHUNKBRIDGE_TARGET", "8")
    with pytest.raises(ConfigError, match="target"):
        load_config()


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
        ({"durable": True, "store": "sqlite"}, "durable needs resume = redis"),
        ({"durable": True, "resume": "redis"}, "a store (store = sqlite or postgres)"),
        ({"max_recoveries": -1}, "max_recoveries"),
        ({"reset_step": True}, "reset_step needs target = 7"),
        ({"reset_step": True, "target": 6}, "reset_step needs target = 7"),
        ({"reset_step": "maybe", "target": 7}, "reset_step"),
    ],
)
def test_bad_configuration_is_reported_with_the_setting(flags: dict, message: str) -> None:
    with pytest.raises(ConfigError, match="invalid configuration") as info:
        load_config(**flags)
    assert message in str(info.value)


def test_durable_turns_need_redis_and_a_store() -> None:
    config = load_config(durable=True, resume="redis", store="postgres").config
    assert config.durable and config.max_recoveries == 3
    assert load_config().config.durable is False


def test_reset_step_from_a_file_the_environment_and_a_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off unless said; the same name everywhere, flags winning as for every setting."""
    from chunkbridge.gateway.cli import build_parser
    from chunkbridge.gateway.cli.flags import load_settings

    assert load_config(target=7).config.reset_step is False
    toml = tmp_path / "c.toml"
    toml.write_text("target = 7\nreset_step = true\n")
    assert load_config(toml).config.reset_step is True
    monkeypatch.setenv("CHUNKBRIDGE_TARGET", "7")
    monkeypatch.setenv("CHUNKBRIDGE_RESET_STEP", "true")
    assert load_config().config.reset_step is True
    monkeypatch.setenv("CHUNKBRIDGE_RESET_STEP", "false")
    assert load_config(toml).config.reset_step is False  # env > file

    def serve(*flags: str) -> GatewayConfig:
        args = build_parser().parse_args(["serve", "--dialect", "openai-chat", *flags])
        return load_settings(args, args.flags).config

    assert serve("--reset-step").reset_step is True  # flag > env
    monkeypatch.setenv("CHUNKBRIDGE_RESET_STEP", "true")
    assert serve("--no-reset-step").reset_step is False
    assert serve().reset_step is True


def test_jwt_key_file(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("secret")
    config = load_config(auth="jwt", jwt_key_file=str(key)).config
    assert config.auth is AuthMode.JWT and config.jwt_verification_key() == "secret"


# -- settings as flags, environment and files ----------------------------------------------------


def _settings_in(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", text))


def test_every_setting_has_a_generated_flag_and_a_documented_row() -> None:
    from chunkbridge.gateway.cli import build_parser

    parser = build_parser()
    serve = next(
        a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "serve"
    )[1]
    flags = {o for action in serve._actions for o in action.option_strings}
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    table = page.split("| setting | default | meaning |", 1)[1].split("\n\n", 1)[0]
    for name, field in GatewayConfig.model_fields.items():
        if field.exclude:
            continue
        assert "--" + name.replace("_", "-") in flags, name
        assert name in _settings_in(table), f"{name} is not in the settings table"
    # dialect settings too, under the dialect's name
    assert {"--openai-chat-model", "--openai-chat-api-key", "--openai-chat-path"} <= flags


def test_flags_take_each_type(tmp_path: Path) -> None:
    from chunkbridge.gateway.cli import build_parser
    from chunkbridge.gateway.cli.flags import load_settings

    args = build_parser().parse_args(
        [
            "serve",
            "--dialect",
            "openai-chat",
            "--target",
            "7",
            "--mask-errors",
            "--no-dynamic-tools",
            "--cors-origins",
            "https://a.example",
            "https://b.example",
            "--prompt-frame",
            '{"type": "ask", "text": "{text}"}',
            "--jwt-algorithms",
            "HS256",
            "--openai-chat-model",
            "gpt-9",
        ]
    )
    config = load_settings(args, args.flags).config
    assert config.target == 7 and config.mask_errors is True and config.dynamic_tools is False
    assert config.cors_origins == ["https://a.example", "https://b.example"]
    assert config.prompt_frame == {"type": "ask", "text": "{text}"}
    assert config.jwt_algorithms == ["HS256"]
    assert config.dialect_settings["openai-chat"].model == "gpt-9"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--prompt-frame", "[1]"])  # not a JSON object


def test_dialect_settings_from_file_environment_and_flags(tmp_path: Path) -> None:
    from chunkbridge.translators.dialects.openai_chat import OpenAIChatSettings

    toml = tmp_path / "c.toml"
    toml.write_text('[openai-chat]\nmodel = "from-file"\npath = "/v2/chat"\n')
    models = {"openai-chat": OpenAIChatSettings}
    environ = {
        "CHUNKBRIDGE_OPENAI_CHAT_MODEL": "from-env",
        "CHUNKBRIDGE_OPENAI_CHAT_API_KEY": "sk-zyx",
    }
    loaded = load_config(toml, dialect_models=models, environ=environ)
    settings = loaded.config.dialect_settings["openai-chat"]
    assert (settings.model, settings.path) == ("from-env", "/v2/chat")
    assert settings.api_key.get_secret_value() == "sk-zyx" and "zyx" not in repr(settings)
    flagged = load_config(
        toml, dialect_models=models, environ=environ, dialect_flags={"openai-chat": {"model": "f"}}
    )
    assert flagged.config.dialect_settings["openai-chat"].model == "f"
    with pytest.raises(ConfigError, match="openai-chat.modle"):
        bad = tmp_path / "bad.toml"
        bad.write_text('[openai-chat]\nmodle = "typo"\n')
        load_config(bad, dialect_models=models, environ={})


def test_an_unknown_chunkbridge_variable_is_reported_with_the_closest_name() -> None:
    from chunkbridge.translators.dialects.openai_chat import OpenAIChatSettings

    environ = {
        "CHUNKBRIDGE_IDLE_TIMOUT": "3",
        "CHUNKBRIDGE_OPENAI_MODEL": "gpt",  # the 0.1 name
        "CHUNKBRIDGE_PORT": "9",
        "OTHER": "x",
    }
    loaded = load_config(dialect_models={"openai-chat": OpenAIChatSettings}, environ=environ)
    assert loaded.config.port == 9
    assert len(loaded.warnings) == 2
    assert "CHUNKBRIDGE_IDLE_TIMOUT" in loaded.warnings[0]
    assert "did you mean CHUNKBRIDGE_IDLE_TIMEOUT" in loaded.warnings[0]
    assert "did you mean CHUNKBRIDGE_OPENAI_CHAT_MODEL" in loaded.warnings[1]


def test_the_jwt_key_file_is_read_once(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("first")
    config = load_config(auth="jwt", jwt_key_file=str(key)).config
    key.write_text("second")
    assert config.jwt_verification_key() == "first"
    key.unlink()
    assert config.jwt_verification_key() == "first"
    with pytest.raises(ConfigError, match="cannot read jwt_key_file"):
        load_config(auth="jwt", jwt_key_file=str(tmp_path / "missing.pem"))


def test_serve_without_a_dialect_says_which_exist(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [k for k in os.environ if k.startswith("CHUNKBRIDGE_")]:
        monkeypatch.delenv(name)
    code, _, err = run_cli(capsys, "serve")
    assert code == 2
    assert "no dialect" in err and "agent-ops-v2" in err


def test_a_dialect_that_does_not_speak_the_urls_transport_is_refused_at_start_up() -> None:
    from chunkbridge.gateway.config import GatewayConfig as Config
    from chunkbridge.gateway.http.app import create_app

    with pytest.raises(ConfigError, match="has no HTTP upstream"):
        create_app(Config(dialect="agent-ops-v2", upstream="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match="unknown dialect 'nope'"):
        create_app(Config(dialect="nope"))
    create_app(Config(dialect="openai-chat", upstream="ws://127.0.0.1:9/s/{session_id}"))
