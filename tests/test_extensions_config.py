import pytest

import robotlab
from robotlab import ConfigurationError, RunConfig


def test_extension_registry():
    robotlab.register_extension("audit", "sentinel")
    try:
        assert robotlab.extension_loaded("audit")
        assert robotlab.extension("audit") == "sentinel"
        assert "audit" in robotlab.loaded_extensions()
        robotlab.register_extension(123, "n")
        assert robotlab.extension_loaded("123")
    finally:
        from robotlab.extensions import unregister_extension

        unregister_extension("audit")
        unregister_extension("123")
    assert not robotlab.extension_loaded("audit")
    assert robotlab.extension("audit") is None


def test_runconfig_merge_overrides_only_what_is_set():
    merged = RunConfig(model="m", temperature=0.1, llm_options={"a": 1}).merge(
        RunConfig(temperature=0.9, llm_options={"b": 2})
    )
    assert merged.model == "m" and merged.temperature == 0.9
    assert merged.llm_options == {"a": 1, "b": 2}
    assert RunConfig().get("max_tool_rounds") == 10


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", 3), ("max_tokens", 0), ("token_budget", -1), ("pool_backend", "gpu"), ("pool_size", 0),
     ("max_tool_rounds", "ten")],
)
def test_invalid_runconfig_names_the_field(field, value):
    with pytest.raises(ConfigurationError, match=field):
        RunConfig(**{field: value})


def test_unknown_option_is_named():
    with pytest.raises(ConfigurationError, match="temprature"):
        RunConfig.from_options({"temprature": 1}, where="robot 'x'")


def test_global_config_env_file_and_configure(tmp_path, monkeypatch):
    cfg = tmp_path / "robotlab.toml"
    cfg.write_text('[robotlab]\nmodel = "file-model"\nmax_tool_rounds = 3\n')
    monkeypatch.setenv("ROBOTLAB_CONFIG_FILE", str(cfg))
    monkeypatch.setenv("ROBOTLAB_MAX_TOOL_ROUNDS", "7")
    run = robotlab.reload_config().run_config
    assert run.model == "file-model"  # from the file
    assert run.max_tool_rounds == 7  # env beats file
    assert robotlab.configure(max_tool_rounds=2).run_config.max_tool_rounds == 2  # code beats env
    with pytest.raises(ConfigurationError, match="temperature"):
        robotlab.configure(temperature=9)
    assert robotlab.config().run_config.max_tool_rounds == 2  # state intact after the bad call
    monkeypatch.setenv("ROBOTLAB_TOKEN_BUDGET", "lots")
    with pytest.raises(ConfigurationError, match="token_budget"):
        robotlab.reload_config()
