"""The configuration reference in docs/ is generated from the definitions and must be up to date."""

from pathlib import Path

from kafka_s3.core.config.reference import document, render

REFERENCE = Path(__file__).resolve().parents[4] / "docs" / "configuration.md"


def test_docs_reference_is_generated_and_current():
    assert REFERENCE.read_text() == document(), "run: python -m kafka_s3.core.config.reference --write " + str(
        REFERENCE
    )


def test_reference_lists_every_sink_and_source_property():
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE

    rendered = render()
    assert all(f"`{key}`" in rendered for key in SINK.props)
    assert all(f"`{key}`" in rendered for key in SOURCE.props)
