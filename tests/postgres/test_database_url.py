"""DATABASE_URL: a PostgreSQL URL becomes Django's settings; anything else fails at start-up."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from omniroute.db.url import database_from_url


def test_a_postgres_url_names_every_part():
    db = database_from_url(
        "postgres://mem:s%40cret@db.internal:6543/omniroute?sslmode=require&conn_max_age=60"
    )
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "omniroute",
        "mem",
        "s@cret",
        "db.internal",
        "6543",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}
    assert (db["CONN_MAX_AGE"], db["CONN_HEALTH_CHECKS"]) == (60, True)
    assert db["TEST"] == {"NAME": None}


def test_the_postgresql_scheme_and_a_test_name_are_taken():
    db = database_from_url("postgresql://postgres@127.0.0.1/omniroute", test_name="omniroute_ci")
    assert (db["HOST"], db["PORT"], db["PASSWORD"], db["CONN_MAX_AGE"]) == ("127.0.0.1", "", "", 0)
    assert db["TEST"] == {"NAME": "omniroute_ci"}


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://root@localhost/omniroute", "unsupported scheme 'mysql'"),
        ("sqlite:///data/omniroute.sqlite3", "unsupported scheme 'sqlite'"),
        ("postgres://postgres@localhost", "must name one database"),
        ("postgres://postgres@localhost/a/b", "must name one database"),
        ("postgres://postgres@localhost:99999/omniroute", "not a valid URL"),
        ("postgres://postgres@localhost/omniroute?ssl_mode=require", "unknown option 'ssl_mode'"),
        ("postgres://postgres@localhost/omniroute?conn_max_age=-1", "conn_max_age=-1 is below 0"),
        ("postgres://postgres@localhost/omniroute?conn_max_age=soon", "is not an integer"),
    ],
)
def test_anything_else_is_refused_with_its_reason(url, words):
    with pytest.raises(ImproperlyConfigured, match=words.replace("(", r"\(")):
        database_from_url(url)
