"""The outbound URL policy, one rule at a time. DNS answers come from a fake resolver."""

from __future__ import annotations

import socket

import pytest

from memory.urlpolicy import UrlPolicyError, check_outbound_url


def resolves_to(*addresses: str):
    def resolver(host, port, **kwargs):
        family = socket.AF_INET6 if ":" in addresses[0] else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolver


def no_dns(host, port, **kwargs):
    raise AssertionError("a literal IP must not be resolved")


PUBLIC = resolves_to("93.184.216.34")


@pytest.mark.parametrize(
    "url",
    ["https://api.openai.com/v1/embeddings", "http://example.com:8080/embeddings", "https://example.com"],
)
def test_public_http_and_https_urls_pass(url):
    check_outbound_url(url, resolver=PUBLIC)


@pytest.mark.parametrize("url", ["http://1.1.1.1/embeddings", "https://[2606:4700:4700::1111]/x"])
def test_public_literal_ips_pass_without_dns(url):
    check_outbound_url(url, resolver=no_dns)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "scheme 'ftp' is not allowed"),
        ("file:///etc/passwd", "scheme 'file' is not allowed"),
        ("example.com/embeddings", "scheme"),
        ("https://user:pass@example.com/", "credentials"),
        ("https://token@example.com/", "credentials"),
        ("https://example.com/v1?key=abc", "query string"),
        ("https://example.com/v1?", "query string"),
        ("https://example.com/v1#frag", "fragment"),
        ("https:///v1", "no host"),
        ("https://exa mple.com/", "whitespace"),
        ("https://example.com:99999/", "malformed"),
        ("http://metadata.google.internal/computeMetadata/v1", "cloud metadata service"),
        ("http://METADATA.GOOGLE.INTERNAL./", "cloud metadata service"),
    ],
)
def test_malformed_or_unsafe_urls_are_refused(url, message):
    with pytest.raises(UrlPolicyError, match=message):
        check_outbound_url(url, resolver=PUBLIC)


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("169.254.169.254", "cloud metadata"),
        ("[fd00:ec2::254]", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("[fe80::1]", "link-local"),
        ("[fe80::1%25eth0]", "link-local"),
        ("224.0.0.1", "multicast"),
        ("[ff02::1]", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("[::]", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("192.0.2.10", "non-global"),
        ("10.1.2.3", "private-network"),
        ("172.16.0.1", "private-network"),
        ("172.31.255.255", "private-network"),
        ("192.168.1.1", "private-network"),
        ("[fd12:3456::1]", "private-network"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("[::1]", "loopback"),
        ("[::ffff:127.0.0.1]", "loopback"),
        ("[::ffff:169.254.169.254]", "cloud metadata"),
        ("[::127.0.0.1]", "loopback"),
        ("[::ffff:10.0.0.1]", "private-network"),
        ("[64:ff9b::a9fe:a9fe]", "cloud metadata"),
        ("[2002:7f00:1::]", "loopback"),
    ],
)
def test_literal_addresses_in_blocked_ranges_are_refused(host, message):
    with pytest.raises(UrlPolicyError, match=message):
        check_outbound_url(f"http://{host}/embeddings", resolver=no_dns)


def test_a_hostname_resolving_to_the_metadata_address_is_refused():
    with pytest.raises(
        UrlPolicyError, match=r"evil\.example \(resolves to 169\.254\.169\.254\) is a cloud metadata"
    ):
        check_outbound_url("https://evil.example/v1", resolver=resolves_to("169.254.169.254"))


def test_a_hostname_resolving_to_ipv4_mapped_loopback_is_refused():
    with pytest.raises(UrlPolicyError, match=r"carries IPv4 127\.0\.0\.1.*loopback"):
        check_outbound_url("https://evil.example/v1", resolver=resolves_to("::ffff:127.0.0.1"))


def test_any_bad_address_among_several_answers_is_enough():
    with pytest.raises(UrlPolicyError, match="private-network"):
        check_outbound_url("https://mixed.example/", resolver=resolves_to("93.184.216.34", "10.0.0.7"))


def test_unresolvable_hosts_are_refused():
    def fail(host, port, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(UrlPolicyError, match="does not resolve"):
        check_outbound_url("https://nowhere.invalid/", resolver=fail)
    with pytest.raises(UrlPolicyError, match="does not resolve"):
        check_outbound_url("https://nowhere.invalid/", resolver=lambda host, port, **kw: [])


@pytest.mark.parametrize(
    ("url", "resolver"),
    [
        ("http://10.0.0.5:8080/v1", no_dns),
        ("http://192.168.1.20/v1", no_dns),
        ("http://[::1]:11434/v1", no_dns),
        ("http://localhost:11434/v1", resolves_to("127.0.0.1")),
        ("http://tei.lan/v1", resolves_to("172.20.0.3")),
    ],
)
def test_allow_private_admits_private_and_loopback(url, resolver):
    with pytest.raises(UrlPolicyError):
        check_outbound_url(url, resolver=resolver)
    check_outbound_url(url, allow_private=True, resolver=resolver)


@pytest.mark.parametrize(
    ("url", "resolver"),
    [
        ("http://169.254.169.254/latest/meta-data", no_dns),
        ("http://100.64.0.1/", no_dns),
        ("http://[fe80::1]/", no_dns),
        ("http://sneaky.example/", resolves_to("::ffff:169.254.169.254")),
    ],
)
def test_allow_private_never_admits_metadata_link_local_or_cgnat(url, resolver):
    with pytest.raises(UrlPolicyError):
        check_outbound_url(url, allow_private=True, resolver=resolver)


def test_the_error_is_a_value_error():
    assert issubclass(UrlPolicyError, ValueError)
