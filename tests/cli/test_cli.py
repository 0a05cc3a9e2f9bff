"""The CLI's contract: --help/--version, and a user error is one line with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from consilium import __version__
from consilium.cli import main


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out
    assert main(["--help"]) == 0
    assert "models" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["--no-such-flag"], "unrecognized arguments"),
    (["models", "check", "--max-concurrency", "0"], "expected a positive integer"),
    (["models", "check", "--model", "nonsense"], "unknown model spec 'nonsense'"),
    (["models", "check", "--model", "gguf:/no/such/file.gguf"], "gguf model file not found"),
    (["models", "check", "--model", "openai:gpt-x"], "needs OPENAI_API_KEY"),
    (["models", "check", "--model", "scripted:/no/such.yaml"], "not found"),
    (["models", "check", "--model", "vllm:some/model"], "pip install 'consilium[vllm]'"),
])
def test_user_errors_are_one_line_and_exit_2(argv: list[str], expected: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_models_check_with_a_scripted_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("model: demo\nrules:\n  - role: structured\n    json: {specialty: cardiology, "
                      "urgency: emergency}\ndefault: Acute inferior myocardial infarction.\n")
    assert main(["models", "check", "--model", f"scripted:{script}"]) == 0
    out = capsys.readouterr().out
    assert "model: demo" in out and "(estimated)" in out and "total: 3 calls" in out
    # The probe's answer is the script's default text: no schema held it, and the script declares none.
    assert ("schema enforced: no (the probe: the output is not valid JSON (Expecting value at line 1 column 1); "
            "the backend does not declare schema enforcement)") in out


@pytest.mark.localhost
@pytest.mark.parametrize("schemas, dialect, verdict", [
    ("honour", "json_schema", "schema enforced: yes (the probe's answer holds the one value its schema allows; "
                              "the backend declares it enforces schemas)"),
    ("honour", "json_object", "schema enforced: yes"),
    ("ignore", "json_schema", "schema enforced: no (the probe: the JSON does not match the triage_code schema: "
                              "code: 'heart' is not one of ['QX-7-LANTERN']; the backend declares it enforces "
                              "schemas); judges ask it constrained first and repair: with a server that ignores "
                              "response_format, run it with --schema-dialect none"),
    ("honour", "none", "schema enforced: no (the probe: the JSON does not match the triage_code schema: code: "
                       "'heart' is not one of ['QX-7-LANTERN']; the backend does not declare schema enforcement)"),
])
def test_models_check_says_whether_the_server_enforced_the_schema(schemas: str, dialect: str, verdict: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from workload import fake_server  # benchmarks/fakeserver.py in its own process

    # Unconstrained, the stand-in answers the check's structured call in its schema and the probe with a code
    # of its own; held to response_format (--schemas honour), it writes each schema's one allowed value.
    rules = [{"contains": ["Which specialty"], "json": {"specialty": "cardiology", "urgency": "emergency"}},
             {"contains": ["triage code"], "json": {"code": "heart"}},
             {"contains": [], "response": "An inferior myocardial infarction."}]
    with fake_server(0.0, rules, ("--schemas", schemas)) as url:
        assert main(["models", "check", "--model", "openai:fake", "--base-url", url,
                     "--schema-dialect", dialect]) == 0
    out = capsys.readouterr().out
    assert verdict in out and "total: 3 calls" in out


@pytest.mark.localhost
def test_models_check_on_a_server_that_refuses_response_format_says_it_was_rejected(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that answers HTTP 400 to any response_format: the plain call is shown, the structured one failed
    (exit 1, as any failed structured call), no probe is sent (its response_format would be refused alike), and
    the verdict line says the schema was rejected, with its key nowhere in the output."""
    from support.localserver import scripted_server

    key = "sk-check-refused-0123456789"
    monkeypatch.setenv("CHECK_REFUSED_KEY", key)
    with scripted_server([("ok", "An inferior myocardial infarction."), ("status", 400), ("status", 400)]) as server:
        rc = main(["models", "check", "--model", f"openai:fake@{server.base_url}#CHECK_REFUSED_KEY"])
        sent = server.requests
    captured = capsys.readouterr()
    out = captured.out
    assert (rc, sent) == (1, 2)
    assert "[plain] latency" in out and "-> An inferior myocardial infarction." in out
    assert "[structured] failed: " in out and "HTTP 400" in out
    assert "schema enforced: no (the server rejected the schema-constrained request: " in out
    assert "it rejects every such call: run it with --schema-dialect none" in out and "total: 1 calls" in out
    assert "Traceback" not in captured.err and key not in out + captured.err


def test_python_dash_m_entry_point_exits_2_without_traceback() -> None:
    done = subprocess.run([sys.executable, "-m", "consilium", "models", "check", "--model", "bogus"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("consilium: error: unknown model spec 'bogus' (expected embedded, gguf:PATH, "
                                   "openai:MODEL, vllm:MODEL, langchain:MODULE:FACTORY, scripted:FILE or "
                                   "replay:TRACE)")


def test_model_config_files_load_and_flags_override(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from consilium.cli.options import add_model_arguments, model_options, model_spec

    configs = Path(__file__).resolve().parents[2] / "configs" / "models"
    parser = argparse.ArgumentParser()
    add_model_arguments(parser)
    args = parser.parse_args(["--model-config", str(configs / "vllm.yaml")])
    assert model_spec(args) == "openai:Qwen/Qwen2.5-7B-Instruct"
    options = model_options(args)
    assert options.base_url == "http://127.0.0.1:8000/v1,http://127.0.0.1:8001/v1"
    assert (options.schema_dialect, options.max_concurrency, options.timeout_s) == ("json_schema", 64, 300)
    args = parser.parse_args(["--model-config", str(configs / "llama-server.yaml"), "--max-concurrency", "3"])
    assert model_options(args).max_concurrency == 3 and model_options(args).schema_dialect == "json_object"
    assert model_spec(parser.parse_args([])) == "embedded"
    args = parser.parse_args(["--model-config", str(configs / "openai.yaml")])
    with pytest.raises(Exception, match=r"api_key_env: \$OPENAI_API_KEY is not set"):
        model_options(args)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert model_options(args).api_key == "sk-test"
    bad = tmp_path / "bad.yaml"
    bad.write_text("spec: embedded\nbase_urls: x\n")
    assert main(["models", "check", "--model-config", str(bad)]) == 2
    assert "bad.yaml: base_urls: Extra inputs are not permitted" in capsys.readouterr().err
