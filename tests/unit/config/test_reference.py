"""The README's configuration reference is generated from the definitions and must be up to date."""

from pathlib import Path

from kafka_s3.core.config.reference import END, START, render

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_reference_is_generated_and_current():
    text = README.read_text()
    block = text.split(START, 1)[1].split(END, 1)[0]
    assert block.strip() == render().strip(), "run: python -m kafka_s3.core.config.reference --update README.md"


def test_reference_lists_every_sink_property():
    from kafka_s3.core.config.sink import SINK

    rendered = render()
    assert all(f"`{key}`" in rendered for key in SINK.props)
