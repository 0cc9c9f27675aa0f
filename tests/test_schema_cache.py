"""The compiled-validator cache: used when trusted, never needed for a right answer."""

from __future__ import annotations

import json
import os

import fastjsonschema
import pytest

from perflab import schema, schema_cache

SCHEMA = json.dumps(
    {
        "type": "object",
        "required": ["tool"],
        "properties": {"tool": {"const": "perflab"}, "n": {"type": "integer", "minimum": 0}},
    }
).encode()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory, and a count of fastjsonschema's code generations."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("PERFLAB_CACHE_DIR", str(directory))
    generated = []
    real = fastjsonschema.compile_to_code

    def counting(definition, *args, **kwargs):
        generated.append(1)
        return real(definition, *args, **kwargs)

    monkeypatch.setattr(fastjsonschema, "compile_to_code", counting)
    return directory, generated


def check(validate):
    """The validator accepts a good document and names the problem of a bad one."""
    assert validate({"tool": "perflab", "n": 3}) == {"tool": "perflab", "n": 3}
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match="data.n must be"):
        validate({"tool": "perflab", "n": -1})


def test_a_second_process_loads_the_compiled_code(cache):
    directory, generated = cache
    check(schema_cache.validator(SCHEMA))
    check(schema_cache.validator(SCHEMA))
    assert len(generated) == 1
    (kept,) = directory.iterdir()
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    assert oct(directory.stat().st_mode & 0o777) == "0o700"


def test_an_edited_schema_is_compiled_again(cache):
    _, generated = cache
    schema_cache.validator(SCHEMA)
    schema_cache.validator(SCHEMA.replace(b'"minimum": 0', b'"minimum": 1'))
    assert len(generated) == 2


def test_a_corrupt_file_is_replaced(cache):
    directory, generated = cache
    schema_cache.validator(SCHEMA)
    (kept,) = directory.iterdir()
    kept.write_bytes(b"\x00garbage")
    check(schema_cache.validator(SCHEMA))
    check(schema_cache.validator(SCHEMA))
    assert len(generated) == 2


def test_a_directory_others_may_write_to_is_not_trusted(cache):
    directory, generated = cache
    schema_cache.validator(SCHEMA)
    os.chmod(directory, 0o777)
    check(schema_cache.validator(SCHEMA))
    assert len(generated) == 2


def test_without_a_usable_directory_it_still_validates(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("PERFLAB_CACHE_DIR", str(blocker / "cache"))
    check(schema_cache.validator(SCHEMA))


def test_the_results_schema_gives_the_same_answers_from_the_cache(cache, monkeypatch):
    document = {"tool": "perflab", "kind": "run", "benchmarks": [{"name": 5}]}
    schema._validator.cache_clear()
    first = schema.validate(document)
    schema._validator.cache_clear()
    assert schema.validate(document) == first
    assert first.startswith("missing key")
    schema._validator.cache_clear()


def test_digest_is_hashlib_sha256() -> None:
    import hashlib

    from perflab.digest import sha256

    for data in (b"", b"abc", bytes(range(256)) * 100):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
