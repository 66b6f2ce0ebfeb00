"""Every environment variable the settings read is documented in .env.example."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_read_from_the_environment_is_in_env_example():
    settings_source = (ROOT / "omniroute" / "settings.py").read_text()
    read = set(re.findall(r'env(?:str|bool|int|float|choice|list)\(\s*"([A-Z0-9_]+)"', settings_source))
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    assert len(read) > 30
    assert read - documented == set()
