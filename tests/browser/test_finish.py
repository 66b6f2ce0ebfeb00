"""The finish in a real browser: the Studio-styled sign-in page with its favicon, and the Studio's
pages at 1440 px and at a 390 px phone width, where nothing may run off the right edge (the top bar's
links used to). Screenshots go to /tmp/shots (login-1440, login-390, memory-1440, memory-390,
providers-390, and the other pages at 390 px) for a person to look at."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from memory.models import ApiKey
from tests.factories import make_memory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "finish-pass-123"
SHOTS = Path("/tmp/shots")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}

# What lies past the right edge of the viewport, if anything: the document's width, and the elements
# whose box ends beyond it outside any scrolling frame (to name the culprit when the assertion fails).
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  };
  const culprits = [...document.body.querySelectorAll('*')]
    .filter((el) => el.getBoundingClientRect().right > width + 0.5 && !inScroller(el))
    .slice(0, 10)
    .map((el) => `${el.tagName.toLowerCase()}.${el.className} ends at ${Math.round(el.getBoundingClientRect().right)}`);
  return {scrollWidth: document.documentElement.scrollWidth, culprits};
}"""


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)


@pytest.fixture
def owner(transactional_db) -> ApiKey:
    key = ApiKey.issue(name="acme-app")[0]
    for i, text in enumerate(
        [
            "I prefer dark mode in every editor",
            "We decided to use PostgreSQL for billing",
            "My daughter Ana starts school in September",
        ]
    ):
        make_memory(key, text, key=f"preference:item-{i}")
    return key


def shoot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def assert_fits_390(page, what: str) -> None:
    found = page.evaluate(OVERFLOW)
    assert found["scrollWidth"] <= 390, f"{what}: {found}"


def sign_in(page, next_path: str = "/dashboard/memory") -> None:
    page.goto(f"/admin/login/?next={next_path}")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"**{next_path}**")


def test_the_sign_in_page_at_1440_and_390(page, admin):
    page.set_viewport_size(DESKTOP)
    page.goto("/admin/login/?next=/dashboard/memory")
    assert page.title() == "Sign in · OmniRoute Memory"
    assert page.locator("h1").inner_text() == "Sign in to the Studio"
    assert page.locator("text=Django administration").count() == 0
    icon = page.locator("link[rel=icon]").get_attribute("href")
    answer = page.request.get(icon)
    assert answer.status == 200 and answer.headers["content-type"].startswith("image/svg+xml")
    card = page.locator(".login-card").bounding_box()
    assert card["width"] == pytest.approx(400, abs=1)  # a centred card, not the full width
    assert card["x"] == pytest.approx((1440 - 400) / 2, abs=20)
    shoot(page, "login-1440")

    page.set_viewport_size(PHONE)
    page.goto("/admin/login/?next=/dashboard/memory")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "not-the-password")
    page.click("input[type=submit]")
    error = page.locator(".alert.error")
    assert "Please enter the correct username and password for a staff account" in error.inner_text()
    assert_fits_390(page, "login")
    box = page.locator(".login-card").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    shoot(page, "login-390")

    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/memory")
    assert page.js_errors == []


def test_the_memory_page_at_1440_and_390(page, admin, owner):
    page.set_viewport_size(DESKTOP)
    sign_in(page)
    page.locator("#memory-table td", has_text="dark mode").first.wait_for()
    # At desktop width the top bar stays one row.
    assert page.locator(".topbar").bounding_box()["height"] <= 60
    shoot(page, "memory-1440")

    page.set_viewport_size(PHONE)
    page.reload()
    page.locator("#memory-table td", has_text="dark mode").first.wait_for()
    assert_fits_390(page, "memory page")
    # Every link of the top bar is on screen (they wrap onto rows of their own), none cut off.
    links = page.locator(".topbar .nav a")
    assert links.count() >= 6
    for i in range(links.count()):
        box = links.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, links.nth(i).inner_text()
    logout = page.locator(".topbar .user button").bounding_box()
    assert logout["x"] + logout["width"] <= 390
    # The list still scrolls sideways inside its own frame.
    frame = page.locator("#memory-table").locator("xpath=..")
    assert frame.evaluate("el => el.scrollWidth > el.clientWidth && getComputedStyle(el).overflowX") == "auto"
    shoot(page, "memory-390")

    for tab in ("Sandbox", "Engine", "Audit"):
        page.click(f"a.tab:has-text('{tab}')")
        page.wait_for_url(f"**tab={tab.lower()}**")
        page.wait_for_load_state("networkidle")
        assert_fits_390(page, f"{tab} tab")
        shoot(page, f"memory-{tab.lower()}-390")
    assert page.js_errors == []


@pytest.mark.parametrize("name", ["providers", "keys", "tokens", "ledger", "settings"])
def test_the_other_pages_fit_390_and_render_at_1440(page, admin, owner, name):
    page.set_viewport_size(PHONE)
    sign_in(page, f"/dashboard/{name}")
    page.wait_for_load_state("networkidle")
    assert_fits_390(page, f"{name} page")
    shoot(page, f"{name}-390")
    page.set_viewport_size(DESKTOP)
    page.reload()
    page.wait_for_load_state("networkidle")
    assert page.evaluate(OVERFLOW)["scrollWidth"] <= DESKTOP["width"], f"{name} page at 1440"
    shoot(page, f"{name}-1440")
    assert page.js_errors == []
