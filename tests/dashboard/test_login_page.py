"""The sign-in page (LOGIN_URL, /admin/login/) in the Studio's look: staff only, a safe ``next``, the
throttle's 429 with Retry-After kept, the favicon, and the admin sending its users to the same page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/"
STUDIO = "/dashboard/memory"


def sign_in(client: Client, username: str, password: str, next_path: str | None = STUDIO, ip="192.0.2.10"):
    data = {"username": username, "password": password}
    if next_path is not None:
        data["next"] = next_path
    return client.post(LOGIN, data, REMOTE_ADDR=ip)


def test_the_page_is_the_studios_not_the_admins(client):
    response = client.get(f"{LOGIN}?next={STUDIO}")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Django administration" not in html and "admin/css" not in html
    assert "<title>Sign in · OmniRoute Memory</title>" in html
    assert "Sign in to the Studio" in html
    assert 'href="/static/dashboard/studio.css"' in html
    assert '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">' in html
    assert re.search(r'<input type="text" name="username"[^>]*id="id_username"', html)
    assert re.search(r'<input type="password" name="password"[^>]*id="id_password"', html)
    assert f'<input type="hidden" name="next" value="{STUDIO}">' in html
    assert 'name="csrfmiddlewaretoken"' in html
    # Signed out, the top bar has the brand only: no links into pages that would send you back here.
    assert 'aria-label="Main"' not in html and "Log out" not in html


def test_a_staff_member_signs_in_and_lands_on_next(client, staff_user):
    response = sign_in(client, "operator", "pw-op-123", next_path="/dashboard/keys")
    assert response.status_code == 302 and response["Location"] == "/dashboard/keys"
    assert client.get("/dashboard/keys").status_code == 200


def test_without_next_or_with_a_foreign_next_it_lands_on_the_studio(client, staff_user):
    assert sign_in(client, "operator", "pw-op-123", next_path=None)["Location"] == STUDIO
    client.logout()
    assert sign_in(client, "operator", "pw-op-123", next_path="https://evil.example/")["Location"] == STUDIO


def test_a_wrong_password_shows_the_error_on_the_same_page(client, staff_user):
    response = sign_in(client, "operator", "wrong")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Please enter the correct username and password for a staff account" in html
    assert 'class="alert error"' in html and "Sign in to the Studio" in html
    assert 'value="operator"' in html  # the username is kept, the password is not
    assert "wrong" not in html


def test_an_empty_form_names_the_missing_fields(client):
    html = client.post(LOGIN, {"username": "", "password": ""}).content.decode()
    assert html.count("This field is required.") == 2
    assert html.count('class="field has-error"') == 2


def test_a_user_who_is_not_staff_cannot_sign_in(client, db):
    get_user_model().objects.create_user("visitor", password="pw-visitor-1")
    response = sign_in(client, "visitor", "pw-visitor-1")
    assert response.status_code == 200
    assert "for a staff account" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_signed_in_staff_member_is_sent_on(client, staff_user):
    client.force_login(staff_user)
    response = client.get(f"{LOGIN}?next=/dashboard/providers")
    assert response.status_code == 302 and response["Location"] == "/dashboard/providers"


def test_a_signed_in_non_staff_user_sees_the_form_with_a_note_and_no_redirect_loop(client, db):
    client.force_login(get_user_model().objects.create_user("visitor", password="pw-visitor-1"))
    response = client.get(f"{LOGIN}?next={STUDIO}")
    html = response.content.decode()
    assert response.status_code == 200
    assert "You are signed in as <strong>visitor</strong>, which is not a staff account." in html


def test_the_throttle_answers_429_with_retry_after_on_the_studio_page(client, staff_user, settings):
    settings.OMNIROUTE_LOGIN_FAILURES_PER_USER = 3
    answers = [sign_in(client, "operator", "wrong", ip=f"192.0.2.{n + 1}") for n in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    html = refused.content.decode()
    assert int(refused["Retry-After"]) >= 1
    assert "Too many failed sign-ins from this username. Try again in" in html
    assert "Sign in to the Studio" in html
    # The right password is refused too while the username is locked.
    assert sign_in(client, "operator", "pw-op-123", ip="198.51.100.9").status_code == 429


def test_the_admin_sends_its_users_to_this_page_and_back(client, admin_user):
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"] == f"{LOGIN}?next=/admin/"
    page = client.get(response["Location"]).content.decode()
    assert "Sign in to the Studio" in page and "Django administration" not in page
    signed_in = sign_in(client, "root", "pw-root-123", next_path="/admin/")
    assert signed_in["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_the_favicon_is_served_and_linked_from_every_studio_page(studio):
    icon = Client().get("/static/favicon.svg")
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    assert body.startswith(b"<svg") and b"<title>OmniRoute Memory</title>" in body
    for path in (STUDIO, "/dashboard/keys", "/dashboard/providers", "/dashboard/settings"):
        html = studio.get(path).content.decode()
        assert '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">' in html, path
